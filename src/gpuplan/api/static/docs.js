/* Offline API reference: lists the operations of /openapi.json (no Swagger UI, nothing from a CDN). */
"use strict";
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}
async function main() {
  const spec = await (await fetch("/openapi.json")).json();
  const host = document.getElementById("ops");
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const box = el("div", undefined, "op");
      box.appendChild(el("h2", method.toUpperCase() + " " + path));
      if (op.summary) box.appendChild(el("p", op.summary));
      const params = (op.parameters || []).map((p) => {
        const s = p.schema || {};
        const range = [s.minimum !== undefined ? "≥ " + s.minimum : "", s.maximum !== undefined ? "≤ " + s.maximum : "",
                       s.enum ? s.enum.join(" | ") : ""].filter(Boolean).join(", ");
        return p.name + " (" + p.in + (range ? "; " + range : "") + ")" + (p.description ? ": " + p.description : "");
      });
      if (op.requestBody) params.unshift("body: a workload (JSON)");
      if (params.length) {
        const ul = el("ul");
        for (const p of params) ul.appendChild(el("li", p));
        box.appendChild(ul);
      }
      const codes = Object.entries(op.responses || {}).map(([c, r]) => c + " " + (r.description || ""));
      box.appendChild(el("p", "Responses: " + codes.join("; "), "muted"));
      host.appendChild(box);
    }
  }
}
document.addEventListener("DOMContentLoaded", main);
