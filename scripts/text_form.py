r"""The text form of string values, as nzfs's data.txt and .txt chunk
files hold them (docs/formats.md, "Text files"): one value per line, UTF-8, with
`\\`, `\n`, `\r` escaped and each byte that is not valid UTF-8 as `\xNN`;
fixed-length values lose their trailing NULs. Used by the fixture writers
and scripts/corpus.py (numpy only, so any venv can import it)."""

import numpy as np


def line(v):
    if isinstance(v, str):
        v = v.encode("utf-8", "surrogatepass")
    out = []
    raw = bytes(v)
    i = 0
    while i < len(raw):
        # Longest valid UTF-8 prefix, then one invalid byte.
        for j in range(len(raw), i, -1):
            try:
                s = raw[i:j].decode("utf-8")
                break
            except UnicodeDecodeError:
                continue
        else:
            out.append(f"\\x{raw[i]:02x}")
            i += 1
            continue
        out.append(s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r"))
        i = j
    return "".join(out).encode() + b"\n"


def text_of(values):
    flat = np.asarray(values).reshape(-1)
    out = b""
    for v in flat:
        if isinstance(v, (bytes, np.bytes_)):
            v = bytes(v).rstrip(b"\0")
        elif isinstance(v, (str, np.str_)):
            v = str(v).rstrip("\0")
        out += line(v)
    return out
