"""Every relative link in README.md and docs/*.md resolves.

A link to a file or directory must name one that exists, inside the
repository; a `#fragment` on a Markdown file must name one of its headings
(GitHub's anchors). Links inside fenced code blocks are code, not links.
Standard library only.
"""

from __future__ import annotations

import re
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def prose(text: str) -> str:
    """The text without fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return "\n".join(out)


def anchors(markdown: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose(markdown.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(doc: Path) -> list[str]:
    problems = []
    for target in LINK.findall(prose(doc.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        resolved = (doc.parent / path).resolve() if path else doc
        if REPO not in resolved.parents and resolved != REPO:
            problems.append(f"{target}: leaves the repository")
        elif not resolved.exists():
            problems.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            problems.append(f"{target}: no heading #{fragment}")
    return problems


class DocsLinks(unittest.TestCase):
    def test_every_relative_link_resolves(self) -> None:
        for doc in documents():
            with self.subTest(doc=doc.relative_to(REPO).as_posix()):
                self.assertEqual(broken_links(doc), [])

    def test_the_checker_sees_links_and_headings(self) -> None:
        self.assertEqual(LINK.findall("see [a](docs/x.md#y) and [b](https://e.org)"),
                         ["docs/x.md#y", "https://e.org"])
        self.assertEqual(prose("a\n```\n[x](nowhere)\n```\nb"), "a\nb")
        self.assertIn("lro-proxy", anchors(REPO / "docs" / "performance.md"))


if __name__ == "__main__":
    unittest.main()
