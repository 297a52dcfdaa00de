"""Reading the backtest's HTML chart as a test needs it: its SVGs by what they picture."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def svgs(page: str) -> dict[str, ET.Element]:
    """Every inline SVG of the page, parsed, by its aria-label."""
    found = (ET.fromstring(m.group(0)) for m in re.finditer(r"<svg\b.*?</svg>", page, re.S))
    return {svg.attrib["aria-label"]: svg for svg in found}
