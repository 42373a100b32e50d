#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generate the man(3) API reference from gvloop's public headers.

    scripts/gen-man3.py OUTDIR HEADER:PAGE:EXAMPLE:LIBRARY... 

For each header, one page PAGE.3 with the header's own introduction, its
data types, and one section per call (or group of calls that share a
comment): the prototypes, the thread rule (the [tag] the header puts beside
each call), the description and the error codes the comment names.  The
EXAMPLE file (a complete C program) becomes the page's EXAMPLE section.  A
page NAME.3 containing `.so man3/PAGE.3` is written for every call, so that
`man 3 gvl_acquire` works.  The header comments are the single source: the
pages are rebuilt whenever a header changes.
"""
import errno
import os
import re
import sys

VERSION = os.environ.get("GVLOOP_VERSION", "")
ERRNAMES = set(errno.errorcode.values()) | {
    "EVL_ESTOPPED", "EVL_ENOREG", "EVL_ENOTPOLL", "TKB_ETCL", "TKB_ENOCMD"}
RULES = {
    "any": "any thread",
    "self": "only the OS thread that owns the handle",
    "held": "the owning thread, holding the GVL",
    "not held": "the owning thread, not holding the GVL",
    "loop thread": "only the loop thread (including inside its callbacks)",
    "GVL held": "the caller holds the GVL",
}


def esc(text):
    """Escape text for a roff body line."""
    text = text.replace("\\", "\\e")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def strip_comment(block):
    body = re.sub(r"^\s*/\*+", "", block)
    body = re.sub(r"\*+/\s*$", "", body)
    out = []
    for line in body.split("\n"):
        line = re.sub(r"^\s*\* ?", "", line)
        out.append(line.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


def paragraphs(text):
    """Comment text to roff: blank lines separate paragraphs; a line that
    starts with "- " (after any indent) is a list item, continued by the
    lines indented at least to its text; other indented lines (code,
    tables) are kept as they are."""
    res, para, item = [], [], None
    for line in text.split("\n"):
        bullet = re.match(r"^(\s*)- (.*)$", line)
        lead = len(line) - len(line.lstrip())
        if item is not None and line.strip() and not bullet and lead >= item[0]:
            item[1].append(line.strip())
            continue
        item = None
        if para and (not line.strip() or bullet or line.startswith(("  ", "\t"))):
            res.append(("p", " ".join(para)))
            para = []
        if not line.strip():
            continue
        if bullet:
            item = (len(bullet.group(1)) + 2, [bullet.group(2).strip()])
            res.append(("li", item[1]))
        elif line.startswith(("  ", "\t")):
            res.append(("nf", line))
        else:
            para.append(line.strip())
    if para:
        res.append(("p", " ".join(para)))
    out, in_nf = [], False
    for kind, txt in res:
        if kind == "nf":
            if not in_nf:
                out.append(".PP\n.nf")
                in_nf = True
            out.append(esc(txt))
            continue
        if in_nf:
            out.append(".fi")
            in_nf = False
        if kind == "li":
            out.append(".IP \\(bu 2\n" + esc(" ".join(txt)))
        else:
            out.append(".PP\n" + esc(txt))
    if in_nf:
        out.append(".fi")
    return "\n".join(out)


def parse(path, export):
    src = open(path).read()
    # The introduction: the header's first comment after its licence line.
    intro = next(c for c in (strip_comment(m) for m in re.findall(r"/\*.*?\*/", src, re.S))
                 if not c.strip().startswith("SPDX-License-Identifier"))
    tokens = re.finditer(r"/\*.*?\*/|^" + export + r" [^;]*;|"
                         r"^typedef struct(?: \w+)? \{.*?\} \w+;|^static inline [^{;]*\{|\n\s*\n",
                         src, re.S | re.M)
    calls, types, comment = [], [], None
    for m in tokens:
        t = m.group(0)
        if t.startswith("/*"):
            comment = strip_comment(t)
        elif t.startswith("typedef"):
            name = re.search(r"\} (\w+);$", t).group(1)
            if not name.startswith(("gvl__",)):
                types.append((name, comment, t))
            comment = None
        elif t.startswith((export, "static inline")):
            if t.startswith("static inline"):
                t = export + " " + t[len("static inline"):].rstrip("{").strip() + ";"
            proto = re.sub(r"\s+", " ", t[len(export):]).strip()
            name = re.search(r"\**(\w+)\s*\(", proto).group(1)
            if "__" in name:
                continue
            if calls and calls[-1]["comment"] is comment and comment is not None:
                calls[-1]["protos"].append(proto)
                calls[-1]["names"].append(name)
            else:
                calls.append({"names": [name], "protos": [proto], "comment": comment})
        else:
            comment = None
    return intro, types, calls


def thread_rule(comment):
    m = re.match(r"\s*\[([^\]]+)\]\s*", comment or "")
    if not m:
        return None, comment or ""
    return m.group(1), comment[m.end():]


def page(name, header, intro, types, calls, example, section_title, lib):
    names = [n for c in calls for n in c["names"]]
    example_text = open(example).read()
    first, _, rest = intro.partition("\n\n")
    summary = " ".join(first.split()).split(" -- ", 1)[-1].rstrip(".")
    out = [f'.TH {name.upper()} 3 "" "gvloop {VERSION}" "{section_title}"',
           ".SH NAME",
           f"{name} \\- " + esc(summary),
           ".SH SYNOPSIS", ".nf", f".B #include <{header}>", ".PP"]
    for c in calls:
        for p in c["protos"]:
            out.append(".BI \"" + p.replace("\\", "\\e").replace('"', '\\(dq') + "\"")
    out += [".fi", ".PP", "Link with", f".BR \"$(pkg-config --libs {lib})\"",
            f"or the CMake target \\fBgvloop::{lib}\\fP.",
            ".SH DESCRIPTION", paragraphs(rest)]
    if types:
        out.append(".SH DATA TYPES")
        for tname, comment, text in types:
            out.append(f".SS {tname}")
            if comment:
                out.append(paragraphs(comment))
            out += [".PP", ".nf", ".in +4n", esc(text), ".in", ".fi"]
    out.append(".SH FUNCTIONS")
    for c in calls:
        out.append(".SS " + ", ".join(c["names"]))
        out += [".nf"] + [".B \"" + p.replace('"', '\\(dq') + "\"" for p in c["protos"]] + [".fi"]
        rule, text = thread_rule(c["comment"])
        if rule:
            out.append(".PP\n.B Thread rule:\n" + esc(rule) +
                       (f" ({RULES[rule]})" if rule in RULES else "") + ".")
        out.append(paragraphs(text))
        errs = []
        if c["protos"][0].startswith("int ") and "EINVAL" not in text:
            errs.append("EINVAL")   # every call checks its arguments
        for e in re.findall(r"\b[A-Z][A-Z0-9_]+\b", text):
            if e in ERRNAMES and e not in errs:
                errs.append(e)
        out.append(".PP\n.B Errors:\n" +
                   (", ".join(f"\\fB{e}\\fP" for e in errs) + "."
                    if errs else "none of its own (see RETURN VALUE)."))
        used = [n for n in c["names"] if re.search(r"\b" + n + r"\s*\(", example_text)]
        if used:
            out.append(".PP\n.B Example:\n" + ", ".join(f"\\fB{n}\\fP" for n in used) +
                       " in the program under EXAMPLE.")
    out += [".SH RETURN VALUE",
            "Every call that returns \\fBint\\fP returns 0 or a positive error code; "
            "the introduction above lists them, the \\fIstrerror\\fP and \\fIerr_name\\fP "
            "calls of the library give a code's meaning and name.",
            ".SH EXAMPLE", ".PP", ".nf", ".in +4n", esc(example_text.rstrip()),
            ".in", ".fi",
            ".SH SEE ALSO",
            ", ".join(f"\\fB{p}\\fP(3)" for p in ("gvl", "gvl_trace", "evloop", "tkbridge")
                      if p != name) +
            ", \\fBgvl-trace\\fP(1), \\fBgvwish\\fP(1), \\fBgvloop\\fP(n); "
            "ARCHITECTURE.md in gvloop's sources."]
    return "\n".join(out) + "\n", names


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    titles = {"gvl": "gvloop: the GVL", "gvl_trace": "gvloop: tracing the GVL",
              "evloop": "gvloop: the event loop", "tkbridge": "gvloop: the Tcl/Tk bridge"}
    exports = {"gvl": "GVL_EXPORT", "evloop": "EVL_EXPORT", "tkbridge": "TKB_EXPORT"}
    for arg in sys.argv[2:]:
        header, name, example, lib = arg.split(":")
        intro, types, calls = parse(header, exports[lib])
        text, names = page(name, os.path.basename(header), intro, types, calls,
                           example, titles[name], lib)
        with open(os.path.join(outdir, name + ".3"), "w") as f:
            f.write(text)
        for n in names:
            with open(os.path.join(outdir, n + ".3"), "w") as f:
                f.write(f".so man3/{name}.3\n")


if __name__ == "__main__":
    main()
