"""``f.explain()`` of a fused function: its signatures, why each traced, their kernels."""

from __future__ import annotations

from ..compiler import render
from . import foreach
from .signature import describe


class Explanation:
    """What a fused function traced: per signature its parts, why it traced, and its launches
    (kernel name, key parts, generated source). Nothing compiles or runs."""

    def __init__(self, fused, arch: str | None = None):
        self.fused, self.arch = fused, arch
        self.why, self.traces = fused.why, fused.traces

    def signatures(self) -> list[dict]:
        out = []
        entries = list(self.fused._entries.items())
        entries += self.fused._foreach.entries() if self.fused._foreach else []
        for key, entry in entries:
            target = "cuda" if self.arch else entry.backend.target
            if isinstance(entry, foreach.Entry):
                plans = entry.plans()
            else:
                plans = [(plan, render) for plan, _ in entry.program.launches]
            kernels = [{"name": plan.name, "parts": plan.key_parts,
                        "source": renderer(plan, target)} for plan, renderer in plans]
            out.append({"parts": describe(self.fused, key), "why": entry.why,
                        "kernels": kernels})
        return out

    def __str__(self) -> str:
        lines = [f"fa.fuse {self.fused.__qualname__}: {self.traces} trace(s); last: {self.why}"]
        for k, sig in enumerate(self.signatures()):
            lines.append(f"signature {k}: traced because {sig['why']}; "
                         f"{len(sig['kernels'])} launch(es) per call")
            lines += [f"  {part}{' of ' + who if who else ''}: {value}"
                      for (part, who), value in sig["parts"].items()]
            for kernel in sig["kernels"]:
                lines.append(f"  kernel {kernel['name']}: "
                             + "; ".join(f"{n}={v}" for n, v in kernel["parts"]))
                lines += ["    " + ln for ln in kernel["source"].splitlines()]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        import html

        from ..api.explain import highlighted

        esc = html.escape
        cell = "<td style=\"text-align:left;padding:1px 12px 1px 0;font-family:monospace\">"
        out = [f"<div style=\"font-size:12px\"><b>fa.fuse {esc(self.fused.__qualname__)}</b>: "
               f"{self.traces} trace(s); last: {esc(str(self.why))}"]
        for k, sig in enumerate(self.signatures()):
            out.append(f"<h4 style=\"margin:8px 0 2px\">signature {k}: traced because "
                       f"{esc(str(sig['why']))}; {len(sig['kernels'])} launch(es) per call</h4>")
            rows = "".join(f"<tr>{cell}{esc(part + (' of ' + who if who else ''))}</td>{cell}"
                           f"{esc(str(value))}</td></tr>"
                           for (part, who), value in sig["parts"].items())
            out.append(f"<details><summary>signature parts ({len(sig['parts'])})</summary>"
                       f"<table style=\"border-collapse:collapse\">{rows}</table></details>")
            for kernel in sig["kernels"]:
                parts = "; ".join(f"{n}={v}" for n, v in kernel["parts"])
                out.append(f"<div style=\"margin-top:6px\">kernel <code>{esc(kernel['name'])}"
                           f"</code></div><details><summary>key parts</summary><code>"
                           f"{esc(parts)}</code></details>{highlighted(kernel['source'])}")
        out.append("</div>")
        return "".join(out)
