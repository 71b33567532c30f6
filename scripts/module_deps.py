#!/usr/bin/env python3
"""Print nzfs's module dependency graph and enforce its rules (issue #12).

Edges come from `crate::NAME` and `super::NAME` paths in src/ (use lines and
inline paths alike; `#[cfg(test)]` modules included). Two graphs are checked:
the top-level modules (src/NAME.rs or src/NAME/), and the sibling files
inside each directory module. Fails (exit 1) on any import circle, or when
`zarr`, `codec`, `store`, `array`, `netcdf` or `write` reaches a view (`fs`,
`fuse`, `mount`, `cdl`, `nz`, `daemon`, `cli`, `tiff`). `netcdf` is the
netCDF classic format both ways (its vocabulary, the `.nc` layout, the
classic parser), as `zarr` is Zarr's: the `.nc` view (in `fs`) and the
write-back (`write`) both use it. `write` (the write-back library: the
group writer, edits, the spool) stands beside the core: the mount core
(`mount`) uses it and the views, and it knows neither.

Usage: python3 scripts/module_deps.py [SRC_DIR]
"""
import re
import sys
from pathlib import Path

CORE = {"zarr", "codec", "store", "array", "netcdf", "write"}
VIEWS = {"fs", "fuse", "mount", "cdl", "nz", "daemon", "cli", "tiff"}


def top_level(src: Path) -> dict:
    """module name -> list of its files."""
    mods = {}
    for p in sorted(src.iterdir()):
        if p.suffix == ".rs" and p.stem not in ("lib", "main"):
            mods[p.stem] = [p]
        elif p.is_dir():
            mods[p.name] = sorted(p.rglob("*.rs"))
    return mods


def cycles(graph: dict) -> list:
    """Every elementary circle found by depth-first search (as node lists)."""
    found, seen = [], set()

    def visit(node, path):
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                cyc = path[path.index(nxt):] + [nxt]
                key = frozenset(cyc)
                if key not in seen:
                    seen.add(key)
                    found.append(cyc)
            elif len(path) < 32:
                visit(nxt, path + [nxt])

    for n in sorted(graph):
        visit(n, [n])
    return found


def main() -> int:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    mods = top_level(src)
    ref = re.compile(r"\bcrate::([a-z_]+)")
    graph = {m: set() for m in mods}
    sub_graphs = {}
    for m, files in mods.items():
        for f in files:
            text = f.read_text()
            for target in ref.findall(text):
                if target in mods and target != m:
                    graph[m].add(target)
            if f.parent != src and f.stem != "mod":
                # Sibling files of one directory module.
                sibs = {p.stem for p in f.parent.glob("*.rs")} - {"mod"}
                g = sub_graphs.setdefault(str(f.parent.relative_to(src)), {s: set() for s in sibs})
                local = re.findall(r"\bsuper::([a-z_]+)", text)
                local += re.findall(r"\bcrate::%s::([a-z_]+)" % re.escape(f.parent.name), text)
                for t in local:
                    if t in sibs and t != f.stem:
                        g[f.stem].add(t)
    print("module dependencies (crate::X paths):")
    for m in sorted(graph):
        print(f"  {m:8} -> {', '.join(sorted(graph[m])) or '(none)'}")
    failures = []
    for m in sorted(CORE & graph.keys()):
        bad = graph[m] & VIEWS
        if bad:
            failures.append(f"{m} imports view module(s) {', '.join(sorted(bad))}")
    for cyc in cycles(graph):
        failures.append("circle: " + " -> ".join(cyc))
    for d, g in sorted(sub_graphs.items()):
        for cyc in cycles(g):
            failures.append(f"circle inside {d}/: " + " -> ".join(cyc))
    if failures:
        for f in failures:
            print("module_deps: " + f, file=sys.stderr)
        return 1
    print("module_deps: no circle; zarr, codec, store, array, netcdf and write import no view")
    return 0


if __name__ == "__main__":
    sys.exit(main())
