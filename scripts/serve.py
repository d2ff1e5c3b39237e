"""Serve the built site on http://127.0.0.1:8000 with the headers Pyodide's Stop needs.

Run: ``python scripts/serve.py [--build] [--watch] [--port 8000] [--directory site] [--no-isolation]
[--quiet] [--exit-with PID]``.
With ``--build`` it runs the strict ``mkdocs build`` first; with ``--watch`` it
rebuilds whenever the docs, the package, the hooks or ``mkdocs.yml`` change.
Every response carries ``Cross-Origin-Opener-Policy: same-origin`` and
``Cross-Origin-Embedder-Policy: require-corp`` so the page is cross-origin
isolated (the Run cell's Stop then interrupts Python instead of restarting it),
and ``.wasm``/``.mjs`` get their proper MIME types. ``--no-isolation`` leaves
those two headers out, as a static host such as GitHub Pages would.

A connection that sits idle, or sends its request slowly, is closed: no read or write
may wait more than ``IDLE_TIMEOUT_S``, and a request's line and headers must arrive
whole within ``HEAD_DEADLINE_S`` of the first byte awaited, so a client dripping a
byte at a time cannot hold a thread either. A path that is not UTF-8 once its
%-escapes are undone (``/%ff``, overlong forms such as ``/%c0%ae``) is a 400.

Like a static host it also gzips text responses (HTML, CSS, JavaScript, JSON,
SVG, WebAssembly) for clients that accept it, and sends cache headers: files
whose name carries a content hash (Material's bundles, the versioned wheel) may
be kept for a year; everything else is revalidated on each use, so a rebuild is
seen at once. Byte counts measured against this server are what a host sends.

The tests and ``scripts/bench_browser.py`` use ``build_site`` and
``serve_in_background`` from here, and the tests' shared site runs this script itself
(``--port 0 --quiet --exit-with PID``), so they serve exactly what ``make serve`` does.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.parse
from http import HTTPStatus
from pathlib import Path
from typing import ClassVar

ROOT = Path(__file__).resolve().parent.parent
#: What a rebuild depends on; ``--watch`` polls their modification times.
WATCHED = (
    "docs",
    "roofline",
    "hooks",
    "scripts/sitegen",
    "scripts/build_figures.py",
    "scripts/prerender_math.py",
    "scripts/katex_render.mjs",
    "mkdocs.yml",
)


#: Content types a static host compresses (GitHub Pages, Netlify and Cloudflare all gzip these).
COMPRESSIBLE = re.compile(r"^(text/|application/(javascript|json|manifest\+json|xml|wasm)|image/svg\+xml)")
#: Smaller bodies gain nothing from compression.
MIN_COMPRESS_BYTES = 512
#: A hashed file name (``main.57a0d79d.min.css``) or the wheel's digest folder: content never changes.
IMMUTABLE = re.compile(
    r"(\.[0-9a-f]{8}\.min\.(js|css)$|/assets/runtime/(wheels/[0-9a-f]{12}/|pyodide/\d+\.\d+\.\d+[\w.-]*/|snapshots/.*-[0-9a-f]{16}\.snapshot\.gz$))"
)


#: Longest wait for any one read or write on a connection, seconds (a browser's idle
#: keep-alive connection is closed after it and simply reopened).
IDLE_TIMEOUT_S = 20.0
#: Longest a request's line and headers may take to arrive, seconds.
HEAD_DEADLINE_S = 30.0


class HeadDeadlines:
    """One thread for a whole server that closes connections whose request head is overdue.

    A socket timeout bounds each read, not their sum: a client sending one byte just
    inside it would keep its thread forever. A timer per request would cost a thread
    each; here every connection waiting for its head is in one table, checked twice a
    second.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._due: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._watch, name="head-deadlines", daemon=True).start()

    def arm(self, connection: socket.socket) -> None:
        with self._lock:
            self._due[connection] = time.monotonic() + self.seconds

    def disarm(self, connection: socket.socket) -> None:
        with self._lock:
            self._due.pop(connection, None)

    def _watch(self) -> None:
        while True:
            time.sleep(min(0.5, self.seconds / 4))
            now = time.monotonic()
            with self._lock:
                overdue = [connection for connection, due in self._due.items() if due <= now]
                for connection in overdue:
                    del self._due[connection]
            for connection in overdue:
                try:
                    # The handler's pending read returns nothing, and it closes the connection.
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed


@functools.lru_cache(maxsize=256)
def accepts_gzip(header: str) -> bool:
    """Whether an ``Accept-Encoding`` header admits gzip (RFC 9110, 12.5.3): a ``gzip`` entry with a
    weight above 0, or without one a ``*`` above 0; ``gzip;q=0`` refuses it, as ``*;q=0`` does."""
    weights: dict[str, float] = {}
    for entry in header.split(","):
        coding, *parameters = (part.strip() for part in entry.split(";"))
        weight = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0  # a weight that is not a number accepts nothing
        if coding:
            weights[coding.lower()] = weight
    weight = weights.get("gzip", weights.get("x-gzip", weights.get("*", 0.0)))
    return weight > 0


def _gzipped(path: str, mtime_ns: int, size: int) -> bytes:
    """``path`` gzipped; keyed by modification time and size, so a rebuilt file is compressed again."""
    return gzip.compress(Path(path).read_bytes(), compresslevel=6, mtime=0)


class IsolatedHandler(http.server.SimpleHTTPRequestHandler):
    """Static files plus the cross-origin isolation headers, gzip and cache headers.

    Only files inside the site folder are served: a path with a NUL or another
    control character is a 400, a path that resolves (through a symlink or
    ``..``) outside the folder is a 404, and a folder without ``index.html``
    is a 404 rather than a listing of its files.
    """

    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".whl": "application/zip",
    }
    isolated = True
    quiet = False
    #: Applied to the socket by StreamRequestHandler.setup: every read and write.
    timeout = IDLE_TIMEOUT_S

    def handle_one_request(self) -> None:
        # Armed while the request line and headers arrive; parse_request disarms it, so a
        # slow download of a large body is bounded by the per-write timeout only.
        deadlines = getattr(self.server, "head_deadlines", None)
        if deadlines is not None:
            deadlines.arm(self.connection)
        try:
            super().handle_one_request()
        finally:
            if deadlines is not None:
                deadlines.disarm(self.connection)

    def send_head(self):
        # The parent finds and opens the file and sends the plain headers; send_header
        # and end_headers below swap in the compressed length, copyfile the compressed body.
        self._status = 0
        self._gzip_body: bytes | None = None
        self._content_type = ""
        if not self._regular_or_absent(self.translate_path(self.path)):
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        return super().send_head()

    @staticmethod
    def _regular_or_absent(path: str) -> bool:
        """Whether what the parent would open for ``path`` (a folder's index.html or index.htm) is a
        regular file, or nothing (the parent's own 404). ``stat`` never blocks where ``open`` does:
        opening a FIFO waits for a writer, which no socket timeout covers, so a named pipe in the
        site folder would hold a thread for good; a device could stream without end."""
        if os.path.isdir(path):
            indexes = [os.path.join(path, name) for name in ("index.html", "index.htm")]
            path = next((index for index in indexes if os.path.lexists(index)), "")
        try:
            return stat.S_ISREG(os.stat(path).st_mode)
        except (OSError, ValueError):
            return True  # absent (or unreadable): the parent answers it as before

    def send_response(self, code: int, message: str | None = None) -> None:
        self._status = code
        super().send_response(code, message)

    def send_header(self, keyword: str, value: str) -> None:
        lowered = keyword.lower()
        if lowered == "content-type":
            self._content_type = value
        if lowered == "content-length" and self._compress():
            value = str(len(self._gzip_body))
        super().send_header(keyword, value)

    def _compress(self) -> bool:
        """Whether this response goes out gzipped; on the first call, compress the file."""
        if getattr(self, "_gzip_body", None) is not None:
            return True
        if getattr(self, "_status", 0) != 200 or not COMPRESSIBLE.match(getattr(self, "_content_type", "")):
            return False
        if not accepts_gzip(self.headers.get("Accept-Encoding", "")):
            return False
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        try:
            stat = path.stat()
        except OSError:
            return False
        if stat.st_size < MIN_COMPRESS_BYTES:
            return False
        self._gzip_body = _gzipped(str(path), stat.st_mtime_ns, stat.st_size)
        return True

    def end_headers(self) -> None:
        if self.isolated:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        if getattr(self, "_status", 0) in (200, 304):
            if self._gzip_body is not None:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Vary", "Accept-Encoding")
            # A hashed name never changes content; anything else is revalidated on each use
            # (Last-Modified gives a cheap 304), so the browser never keeps a stale wheel or script.
            if IMMUTABLE.search(self.path.split("?")[0]):
                self.send_header("Cache-Control", "public, max-age=31536000, immutable")
            else:
                self.send_header("Cache-Control", "public, max-age=0, must-revalidate")
        else:
            self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def parse_request(self) -> bool:
        if not super().parse_request():  # reads the headers
            return False
        deadlines = getattr(self.server, "head_deadlines", None)
        if deadlines is not None:
            deadlines.disarm(self.connection)
        try:
            # Strict: a file name is UTF-8, and bytes that are not (%ff, the overlong %c0%ae,
            # an encoded surrogate) name no file; they are the client's error, not a crash.
            path = urllib.parse.unquote(self.path.split("?", 1)[0].split("#", 1)[0], errors="strict")
        except UnicodeDecodeError:
            self.send_error(HTTPStatus.BAD_REQUEST, "Path is not UTF-8")
            return False
        if any(ord(char) < 0x20 or ord(char) == 0x7F for char in path):
            self.send_error(HTTPStatus.BAD_REQUEST, "Control character in path")
            return False
        if not self._inside_root(self.translate_path(self.path)):
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return False
        return True

    def _inside_root(self, path: str) -> bool:
        """Whether ``path``, with every symlink resolved, is the site folder or inside it."""
        root = os.path.realpath(self.directory)
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError):
            return False
        return real == root or real.startswith(root + os.sep)

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        """No listings: a folder without an index is simply not found."""
        self.send_error(HTTPStatus.NOT_FOUND, "File not found")

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # A static host answers a missing page with the site's own 404.html, at whatever depth was asked.
        page = Path(self.directory) / "404.html"
        if code != 404 or not page.is_file():
            super().send_error(code, message, explain)
            return
        body = page.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def copyfile(self, source, outputfile) -> None:
        try:
            if getattr(self, "_gzip_body", None) is not None:
                outputfile.write(self._gzip_body)
            else:
                super().copyfile(source, outputfile)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser stopped reading (navigated away); nothing to report

    def log_message(self, format: str, *args: object) -> None:
        if not self.quiet:
            super().log_message(format, *args)


class SiteServer(http.server.ThreadingHTTPServer):
    """``ThreadingHTTPServer`` whose listening socket queues up to ``request_queue_size`` connections.

    Python's default queue is 5. A page opens more at once than that (Chromium keeps up to six
    per host, and several tabs or test workers share one server), and when the accept loop is
    slow (a loaded machine, the GIL shared with threads sending files) Linux drops the SYNs that
    find the queue full. The browser's retries back off 1, 2, 4, 8 … s, so one dropped connection
    can hold a script, a chart's spec or a wasm fetch for tens of seconds (the likely cause of a
    chart CI once saw still waiting after 40 s). The kernel caps the figure at ``net.core.somaxconn``.
    """

    request_queue_size = 1024


def make_server(
    directory: str | Path,
    port: int = 0,
    *,
    isolated: bool = True,
    quiet: bool = False,
    idle_timeout_s: float = IDLE_TIMEOUT_S,
    head_deadline_s: float = HEAD_DEADLINE_S,
):
    """A threading HTTP server for ``directory`` on 127.0.0.1 (port 0: any free port)."""
    settings = {"isolated": isolated, "quiet": quiet, "timeout": idle_timeout_s}
    handler_class = type("Handler", (IsolatedHandler,), settings)
    handler = functools.partial(handler_class, directory=str(directory))
    server = SiteServer(("127.0.0.1", port), handler)
    server.head_deadlines = HeadDeadlines(head_deadline_s)
    return server


def serve_in_background(server: SiteServer) -> str:
    """Start ``server`` on a daemon thread; return its base URL (``http://127.0.0.1:PORT/``)."""
    threading.Thread(target=server.serve_forever, name="site-server", daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}/"


def build_site(site_dir: str | Path | None = None, site_url: str | None = None) -> None:
    """The strict MkDocs build into ``site_dir`` (default ``site/``).

    ``site_url`` overrides mkdocs.yml's: Material's instant navigation only works
    when it matches the origin serving the site, so a server on another port
    needs a build of its own. The build runs in a child process, so the hooks'
    module reloading never touches the caller.
    """
    site_dir = Path(site_dir or ROOT / "site").resolve()
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    if site_url is None:
        command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)]
    else:
        code = (
            "import sys; from mkdocs.config import load_config; from mkdocs.commands.build import build; "
            "build(load_config('mkdocs.yml', site_url=sys.argv[1], site_dir=sys.argv[2], strict=True))"
        )
        command = [sys.executable, "-c", code, site_url, str(site_dir)]
    subprocess.run(command, cwd=ROOT, check=True, env=env)


def _snapshot() -> dict[str, float]:
    times = {}
    for name in WATCHED:
        path = ROOT / name
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()] if path.exists() else []
        for file in files:
            if "__pycache__" not in file.parts:
                times[str(file)] = file.stat().st_mtime
    return times


def watch_and_rebuild(site_dir: Path, interval: float = 1.0) -> None:
    """Poll the sources; after a change, build into a scratch folder and swap it in.

    Building beside the served folder and renaming keeps the old site online
    for the whole build; a failed build leaves it in place and says why.
    """
    seen = _snapshot()
    while True:
        time.sleep(interval)
        now = _snapshot()
        if now == seen:
            continue
        seen = now
        scratch = site_dir.with_name(site_dir.name + ".building")
        print("Change detected; rebuilding…", flush=True)
        try:
            build_site(scratch)
        except subprocess.CalledProcessError:
            print("Rebuild failed; still serving the last good build.", flush=True)
            continue
        old = site_dir.with_name(site_dir.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if site_dir.exists():
            site_dir.rename(old)
        scratch.rename(site_dir)
        shutil.rmtree(old, ignore_errors=True)
        print("Rebuilt; reload the page.", flush=True)


def _exit_with(pid: int, poll_s: float = 1.0) -> None:
    """End this process once ``pid`` has ended (polled: a process cannot wait on one it did not start)."""
    while True:
        time.sleep(poll_s)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os._exit(0)
        except PermissionError:  # alive, owned by someone else
            pass


def port_number(text: str) -> int:
    """``--port``'s value: a whole number from 0 (any free port) to 65535."""
    if not re.fullmatch(r"\d{1,5}", text) or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: give a whole number from 0 to 65535, e.g. PORT=8001")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="store_true", help="run mkdocs build first")
    parser.add_argument("--watch", action="store_true", help="rebuild when a source changes")
    parser.add_argument("--port", type=port_number, default=8000, help="0 takes any free port (default 8000)")
    parser.add_argument("--directory", default=str(ROOT / "site"))
    parser.add_argument(
        "--no-isolation",
        action="store_true",
        help="leave out COOP/COEP, as a plain static host would (Stop then restarts Python)",
    )
    parser.add_argument("--quiet", action="store_true", help="log no requests")
    parser.add_argument(
        "--exit-with",
        type=int,
        metavar="PID",
        help="stop once process PID has ended (the tests' server outlives the worker that started it)",
    )
    args = parser.parse_args()
    site_dir = Path(args.directory).resolve()
    # The port is taken before the build, so a port in use is said at once, not after a build of minutes.
    # The handler resolves paths under this name on each request, so a swapped-in rebuild is served at once.
    try:
        server = make_server(site_dir, args.port, isolated=not args.no_isolation, quiet=args.quiet)
    except OSError as error:
        parser.exit(
            2,
            f"serve.py: error: cannot serve on port {args.port}: {error.strerror or error}; "
            f"choose another, e.g. make serve PORT={args.port + 1 if args.port else 8001}\n",
        )
    if args.build:
        build_site(site_dir)
    if args.watch:
        threading.Thread(target=watch_and_rebuild, args=(site_dir,), name="rebuild", daemon=True).start()
    with server:
        print(f"Serving {site_dir} on http://127.0.0.1:{server.server_port}/ (Ctrl-C stops)", flush=True)
        if args.exit_with:
            threading.Thread(target=_exit_with, args=(args.exit_with,), name="exit-with", daemon=True).start()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
