"""Image sizes read from file headers, before any pixel is decoded.

:class:`~tritonpy.Image` refuses an image whose header declares more pixels than its
``max_pixels`` before OpenCV allocates anything: a few hundred bytes of a compressed format can
declare gigapixels (a decompression bomb). Every reader here takes untrusted bytes and returns
``(width, height)``, or None when the format is not one it knows or the header is cut short (the
decoder then has the last word, and the decoded size is checked afterwards).
"""

from __future__ import annotations

import re
import struct
from typing import Callable, List, Optional, Tuple

Size = Optional[Tuple[int, int]]


def _pair(data: bytes, fmt: str, start: int, *, height_first: bool = False) -> Size:
    """(width, height) packed as two integers (struct ``fmt``) at ``start``; None when the
    data ends before them."""
    end = start + struct.calcsize(fmt)
    if len(data) < end:
        return None
    first, second = struct.unpack(fmt, data[start:end])
    return (int(second), int(first)) if height_first else (int(first), int(second))


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png(data: bytes) -> Size:
    return _pair(data, ">II", 16)


def _jpeg(data: bytes) -> Size:
    position = 2
    while position + 9 < len(data):
        if data[position] != 0xFF:
            return None
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        length = struct.unpack(">H", data[position + 2 : position + 4])[0]
        # SOF0..SOF15 carry the frame size; C4 (DHT), C8 (JPG), CC (DAC) do not
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return _pair(data, ">HH", position + 5, height_first=True)
        position += 2 + length
    return None


def _bmp(data: bytes) -> Size:
    if len(data) < 26:
        return None
    header_size = struct.unpack("<I", data[14:18])[0]
    if header_size == 12:  # OS/2 BITMAPCOREHEADER: unsigned 16-bit sizes
        width, height = struct.unpack("<HH", data[18:22])
    else:  # BITMAPINFOHEADER and later: signed 32-bit, a negative height means top-down
        width, height = struct.unpack("<ii", data[18:26])
    return abs(int(width)), abs(int(height))


_PNM_TOKEN = re.compile(rb"(?:\s|#[^\n]*\n?)*(\d+)")


def _pnm(data: bytes) -> Size:
    head = data[:4096]
    if head[:2] == b"P7":  # PAM: "WIDTH w" and "HEIGHT h" lines
        width = re.search(rb"\nWIDTH\s+(\d+)", head)
        height = re.search(rb"\nHEIGHT\s+(\d+)", head)
        if width is None or height is None:
            return None
        return int(width.group(1)), int(height.group(1))
    # P1..P6 and PFM (Pf, PF): width and height are the first two numbers after the magic
    first = _PNM_TOKEN.match(head, 2)
    second = _PNM_TOKEN.match(head, first.end()) if first else None
    if first is None or second is None:
        return None
    return int(first.group(1)), int(second.group(1))


def _webp(data: bytes) -> Size:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = struct.unpack("<I", data[21:25])[0]
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None


def _gif(data: bytes) -> Size:
    return _pair(data, "<HH", 6)


def _tiff(data: bytes) -> Size:
    order = "<" if data[:2] == b"II" else ">"
    if len(data) < 8:
        return None
    (offset,) = struct.unpack(order + "I", data[4:8])
    if offset + 2 > len(data):
        return None
    (count,) = struct.unpack(order + "H", data[offset : offset + 2])
    found = {}
    for index in range(count):
        start = offset + 2 + 12 * index
        entry = data[start : start + 12]
        if len(entry) < 12:
            break
        tag, kind = struct.unpack(order + "HH", entry[:4])
        if tag in (256, 257):  # ImageWidth, ImageLength: SHORT (3) or LONG (4)
            fmt = "H" if kind == 3 else "I"
            found[tag] = int(struct.unpack(order + fmt, entry[8 : 8 + struct.calcsize(fmt)])[0])
    if 256 in found and 257 in found:
        return found[256], found[257]
    return None


def _sun_raster(data: bytes) -> Size:
    return _pair(data, ">II", 4)


_HDR_RESOLUTION = re.compile(rb"\n\n([-+])([XY]) (\d+) ([-+])([XY]) (\d+)")


def _radiance(data: bytes) -> Size:
    found = _HDR_RESOLUTION.search(data[:4096])
    if found is None:
        return None
    first, second = int(found.group(3)), int(found.group(6))
    # "-Y height +X width" is the usual orientation; "+X width -Y height" the rotated one
    return (second, first) if found.group(2) == b"Y" else (first, second)


def _jpeg2000(data: bytes) -> Size:
    head = data[:4096]
    siz = head.find(b"\xff\x51")  # codestream SIZ marker: Xsiz, Ysiz, XOsiz, YOsiz
    if head[:2] == b"\xff\x4f" and siz != -1 and len(head) >= siz + 22:
        xsiz, ysiz, xo, yo = struct.unpack(">IIII", head[siz + 6 : siz + 22])
        return max(xsiz - xo, 0), max(ysiz - yo, 0)
    box = head.find(b"ihdr")  # JP2 container: the image header box, height first
    return None if box == -1 else _pair(head, ">II", box + 4, height_first=True)


_READERS: List[Tuple[Callable[[bytes], bool], Callable[[bytes], Size]]] = [
    (lambda d: d[:8] == _PNG_SIGNATURE, _png),
    (lambda d: d[:2] == b"\xff\xd8", _jpeg),
    (lambda d: d[:2] == b"BM", _bmp),
    (lambda d: d[:1] == b"P" and d[1:2] in b"1234567fF" and len(d) > 2, _pnm),
    (lambda d: d[:4] == b"RIFF" and d[8:12] == b"WEBP", _webp),
    (lambda d: d[:6] in (b"GIF87a", b"GIF89a"), _gif),
    (lambda d: d[:4] in (b"II*\x00", b"MM\x00*"), _tiff),
    (lambda d: d[:4] == b"\x59\xa6\x6a\x95", _sun_raster),
    (lambda d: d[:2] == b"#?", _radiance),
    (lambda d: d[:2] == b"\xff\x4f" or d[4:8] == b"jP  ", _jpeg2000),
]


def image_size(data: bytes) -> Size:
    """(width, height) read from the header of a PNG, JPEG, BMP, PNM/PAM/PFM, WebP, GIF,
    TIFF, Sun raster, Radiance HDR or JPEG 2000 image without decoding it; None for other
    formats or a header that cannot be read.

    >>> image_size(b"GIF89a" + bytes([3, 0, 2, 0]))
    (3, 2)
    """
    if data[:8] == _PNG_SIGNATURE and len(data) >= 24:  # the usual case, without a call
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    for matches, read in _READERS:
        if matches(data):
            try:
                return read(data)
            except (struct.error, ValueError, IndexError):
                return None
    return None
