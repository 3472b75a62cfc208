"""Checks of the HTML the reprs write: tags balanced, SVG well-formed XML, no unescaped markup."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from html.parser import HTMLParser

VOID = {"br", "hr", "img", "input", "meta", "link", "col", "wbr", "area", "base", "source"}
SVG_VOID_OK = {"path", "rect", "line", "circle", "stop"}   # self-closed inside SVG


class _Balance(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def check_html(text: str) -> list[str]:
    """The tags of ``text`` in order, after asserting they balance and each ``<svg>`` parses as
    XML. Raises AssertionError naming the first fault."""
    parser = _Balance()
    parser.feed(text)
    parser.close()
    assert not parser.errors, parser.errors[:3]
    assert not parser.stack, f"unclosed: {parser.stack}"
    start = 0
    while (at := text.find("<svg", start)) >= 0:
        end = text.index("</svg>", at) + len("</svg>")
        ET.fromstring(text[at:end])
        start = end
    return parser.tags
