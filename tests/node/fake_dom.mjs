// The few DOM calls the page's drawing modules make, for Node: elements with attributes,
// class names and children, text nodes, and serialisation as a browser's outerHTML gives it
// (text and attribute values escaped). A test reads what a module built as markup, so a
// module that built markup from text of its own would show here as unescaped.

const escapeText = (text) => text.replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);
const escapeAttribute = (text) => text.replace(/[&"]/g, (c) => ({ "&": "&amp;", '"': "&quot;" })[c]);

class FakeText {
  constructor(text) {
    this.data = String(text);
  }
  get outerHTML() {
    return escapeText(this.data);
  }
}

class FakeElement {
  constructor(name) {
    this.tagName = name;
    this.attributes = new Map();
    this.childNodes = [];
  }
  setAttribute(name, value) {
    this.attributes.set(name, String(value));
  }
  getAttribute(name) {
    return this.attributes.get(name) ?? null;
  }
  set className(value) {
    this.setAttribute("class", value);
  }
  get className() {
    return this.getAttribute("class") ?? "";
  }
  set textContent(value) {
    this.childNodes = [new FakeText(value)];
  }
  append(...children) {
    for (const child of children) this.childNodes.push(typeof child === "string" ? new FakeText(child) : child);
  }
  replaceChildren(...children) {
    this.childNodes = [];
    this.append(...children);
  }
  get innerHTML() {
    return this.childNodes.map((child) => child.outerHTML).join("");
  }
  get outerHTML() {
    const attributes = [...this.attributes].map(([name, value]) => ` ${name}="${escapeAttribute(value)}"`).join("");
    return `<${this.tagName}${attributes}>${this.innerHTML}</${this.tagName}>`;
  }
}

/** Put a `document` with createElement, createElementNS and createTextNode on globalThis. */
export function installFakeDocument() {
  globalThis.document = {
    createElement: (name) => new FakeElement(name),
    createElementNS: (_, name) => new FakeElement(name),
    createTextNode: (text) => new FakeText(text),
  };
}

/** A container as the page gives a drawing: a width, and its content as markup. */
export function fakeContainer(width) {
  const container = new FakeElement("div");
  container.clientWidth = width;
  return container;
}
