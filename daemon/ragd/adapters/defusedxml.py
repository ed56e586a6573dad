"""defusedxml behind one adapter: XML from the network, parsed without its traps.

Owns parsing the XML ragd reads from sites it does not control (sitemaps): no DTD at
all, hence no entity expansion (billion laughs) and no external entities, through
defusedxml's public `ElementTree.fromstring`. The size of what is parsed is capped by the
caller (ragd.sources.http_client). Elements are returned as the standard library's.
"""

from __future__ import annotations

from xml.etree.ElementTree import Element, ParseError

import defusedxml
import defusedxml.ElementTree


def parse_xml(data: bytes) -> Element:
    """The document's root element; ValueError saying why for anything but plain XML."""
    try:
        root: Element = defusedxml.ElementTree.fromstring(data, forbid_dtd=True)
    except defusedxml.DefusedXmlException as exc:
        raise ValueError(f"refused XML: {type(exc).__name__}") from None
    except ParseError as exc:
        raise ValueError(f"not well-formed XML ({exc})") from None
    return root


def local_name(element: Element) -> str:
    """An element's tag without its namespace: '{ns}url' -> 'url'."""
    return element.tag.rpartition("}")[2]
