// Every chapter's quiz (roofline.quiz; the chapter's quiz.py, rendered by
// scripts/sitegen/widgets.py's quiz()). This file knows no question: "New question" picks a
// random seed and asks the calculators' worker for the question drawn for it; "Check" sends the
// seed, the typed text and the unit, and Python grades it (the reading of the text included:
// a hostile answer is one line from Python). Every reply is written into the page as text.
// Progress is counted once per question (progress.mjs).
import { progressWords, readProgress, recordAnswer } from "./progress.mjs";
import { runtime } from "./runtime.mjs";

const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
const text = (value) => (typeof value === "string" ? value : "");

/** A seed from 1 to 2**53 - 1 (the build's pre-drawn question is seed 0). */
function newSeed() {
  const words = crypto.getRandomValues(new Uint32Array(2));
  return (words[0] % 2 ** 21) * 2 ** 32 + words[1] || 1;
}

class QuizWidget {
  constructor(section, signal) {
    this.section = section;
    this.name = section.dataset.rfQuiz;
    this.chapter = section.dataset.rfChapter;
    this.moduleURL = new URL(section.dataset.rfModule, location.href).href;
    this.seed = Number(section.dataset.rfSeed) || 0;
    this.question = section.querySelector("[data-rf-quiz-question]");
    this.form = section.querySelector("form");
    this.answer = this.form.elements.answer;
    this.unit = this.form.elements.unit;
    this.result = section.querySelector("[data-rf-quiz-result]");
    this.working = section.querySelector("[data-rf-quiz-working]");
    this.progress = section.querySelector("[data-rf-quiz-progress]");
    this.newButton = section.querySelector("[data-rf-quiz-new]");
    this.counted = { attempted: false, right: false };
    this.busy = false;
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.check();
    }, { signal });
    this.newButton.addEventListener("click", () => this.newQuestion(), { signal });
    this.showProgress();
  }

  showProgress() {
    this.progress.textContent = progressWords(readProgress()[this.chapter]);
  }

  async ask(request) {
    this.busy = true;
    this.section.dataset.state = "computing";
    try {
      const reply = await runtime.calculate(this.name, this.moduleURL, request);
      return isObject(reply) ? reply : { error: "the answer was not a reply" };
    } finally {
      this.busy = false;
      this.section.dataset.state = "ready";
    }
  }

  async newQuestion() {
    if (this.busy) return;
    const seed = newSeed();
    this.result.textContent = "Drawing a new question…";
    const reply = await this.ask({ action: "new", seed, answer: "", unit: "" });
    if (reply.error || typeof reply.question !== "string" || !Array.isArray(reply.units)) {
      this.result.textContent = `No new question: ${text(reply.error) || "Python gave no question"}`;
      return;
    }
    this.seed = seed;
    this.section.dataset.rfSeed = String(seed);
    this.question.textContent = reply.question;
    this.unit.replaceChildren(
      ...reply.units.filter((unit) => typeof unit === "string").map((unit) => {
        const option = document.createElement("option");
        option.value = unit;
        option.textContent = unit;
        option.selected = unit === reply.unit;
        return option;
      }),
    );
    this.answer.value = "";
    this.working.hidden = true;
    this.working.querySelector("ol").replaceChildren();
    this.counted = { attempted: false, right: false };
    this.result.textContent = "New question drawn. Type your answer, pick its unit, then press Check.";
    this.answer.focus();
  }

  async check() {
    if (this.busy) return;
    this.result.textContent = "Checking…";
    const reply = await this.ask({ action: "check", seed: this.seed, answer: this.answer.value, unit: this.unit.value });
    if (reply.error) {
      this.result.textContent = `Not checked: ${text(reply.error)}`;
      return;
    }
    const correct = reply.correct === true ? true : reply.correct === false ? false : null;
    this.section.dataset.verdict = correct === null ? "unread" : correct ? "right" : "wrong";
    this.result.textContent = text(reply.line);
    const lines = Array.isArray(reply.working) ? reply.working.filter((line) => typeof line === "string") : [];
    this.working.querySelector("ol").replaceChildren(
      ...lines.map((line) => {
        const item = document.createElement("li");
        item.textContent = line;
        return item;
      }),
    );
    this.working.hidden = lines.length === 0;
    if (correct === null) return;
    const count = { attempted: this.counted.attempted ? 0 : 1, right: correct && !this.counted.right ? 1 : 0 };
    this.counted = { attempted: true, right: this.counted.right || correct };
    if (count.attempted || count.right) recordAnswer(this.chapter, count);
    this.showProgress();
  }
}

/** Set up every quiz under `container` that is not set up yet. */
export function mountQuizzes(container, signal) {
  for (const section of container.querySelectorAll("[data-rf-quiz]:not([data-rf-mounted])")) {
    section.dataset.rfMounted = "";
    runtime.configureFrom(section);
    new QuizWidget(section, signal);
    runtime.preloadCalculator(section.dataset.rfQuiz, new URL(section.dataset.rfModule, location.href).href);
  }
}
