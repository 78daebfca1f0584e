"""The documentation site: `mkdocs build --strict`, served on 127.0.0.1 and opened in headless
Chromium (Debian's `chromium`, which `.ci/run` installs): the home page, a how-to page and the API
reference render their content, and no internal link of the built site points at a missing page
or anchor. Without Chromium the rendering test skips, except on CI (`CI=true`), where it fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
ON_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# Page (relative to the site) -> texts its rendered DOM must hold: the page's own content, and
# the navigation that Material's theme draws on every page.
PAGES = {
    "index.html": [
        "Distributed deep reinforcement learning in PyTorch",
        "Two commands",
        "Getting started",
    ],
    "how-to/train/index.html": ["Run flags", "--max-time", "Recover from faults"],
    "reference/api/index.html": ["shoal.train", "shoal.Callback", "on_evaluation", "LoadedPolicy"],
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built strictly (a warning is an error) from this checkout."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


@pytest.fixture(scope="module")
def server(site: Path):
    """`python -m http.server` on 127.0.0.1, on a port the OS picks; yields the base URL."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-u",
            "-m",
            "http.server",
            "0",
            "--bind",
            "127.0.0.1",
            "--directory",
            str(site),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # "Serving HTTP on 127.0.0.1 port 41234 (http://...) ..."
        words = line.split()
        assert "port" in words, f"http.server did not start: {line!r}"
        yield f"http://127.0.0.1:{int(words[words.index('port') + 1])}/"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    reason = "headless Chromium is not installed (apt-get install chromium; .ci/run installs it)"
    if ON_CI:
        pytest.fail(f"{reason}, and CI must render the documentation site")
    pytest.skip(reason)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_renders_in_chromium(page: str, server: str, tmp_path: Path) -> None:
    chromium = _chromium()
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            server + page,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    dom = done.stdout
    assert done.returncode == 0 and "</html>" in dom, (
        f"chromium failed on {page}:\n{done.stderr[-2000:]}"
    )
    for text in PAGES[page]:
        assert text in dom, f"{page} as rendered by Chromium lacks {text!r}"
    # The theme's stylesheet is linked, and it is served from the site itself.
    links = _links(dom)
    sheets = [href for tag, href in links if tag == "link" and "/stylesheets/main." in href]
    assert sheets, f"{page}: no Material stylesheet linked"


def test_no_broken_internal_link(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert (site / "index.html") in pages and len(pages) > 20
    ids = {page: _ids(page.read_text(encoding="utf-8")) for page in pages}
    broken = []
    for page in pages:
        for tag, href in _links(page.read_text(encoding="utf-8")):
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:", "data:")):
                continue
            if not parts.path:  # "#anchor" on the same page
                target = page
            else:
                # Relative links, and the root-relative ones of 404.html (served at any path).
                base = site if parts.path.startswith("/") else page.parent
                target = (base / unquote(parts.path).lstrip("/")).resolve()
                if target.is_dir() or parts.path.endswith("/"):
                    target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: <{tag}> {href} (no such file)")
            elif (
                parts.fragment
                and target.suffix == ".html"
                and unquote(parts.fragment) not in ids[target]
            ):
                broken.append(f"{page.relative_to(site)}: <{tag}> {href} (no such anchor)")
    assert not broken, "broken internal links:\n" + "\n".join(broken)


def test_nothing_fetched_from_outside(site: Path) -> None:
    """The site is built and served offline: no web fonts or scripts from other hosts."""
    for page in [site / name for name in PAGES]:
        for tag, href in _links(page.read_text(encoding="utf-8")):
            if tag in ("link", "script", "img"):
                assert not urlsplit(href).netloc, f"{page.name} loads {href} from another host"


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("href", "src") and tag in ("a", "link", "script", "img", "source", "video"):
                self.links.append((tag, value))
            elif name == "id":
                self.ids.add(value)


def _links(html: str) -> list[tuple[str, str]]:
    collector = _Collector()
    collector.feed(html)
    return collector.links


def _ids(html: str) -> set[str]:
    collector = _Collector()
    collector.feed(html)
    return collector.ids
