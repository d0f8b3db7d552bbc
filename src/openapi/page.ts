import { inlinePagePolicy } from "../lib/page";

/**
 * GET /docs: an interactive reference built in the browser from /openapi.json. Self-contained (no CDN,
 * no outside request): a few KB of HTML, CSS and script, served by the Worker itself. Every operation
 * gets a form to try it against this same origin.
 */
export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Notes API reference</title>
<link rel="icon" href="data:,">
<style>
  :root { font-family: system-ui, sans-serif; color: #1b1f24; background: #f6f8fa; }
  body { max-width: 960px; margin: 0 auto; padding: 1.5rem; }
  h1 { margin: 0 0 .25rem; } .lead { color: #57606a; margin-top: 0; }
  .auth { background: #fff; border: 1px solid #d0d7de; border-radius: 8px; padding: .75rem 1rem; margin: 1rem 0; }
  .auth input { width: 100%; font-family: ui-monospace, monospace; }
  h2 { margin-top: 2rem; text-transform: capitalize; }
  details.op { background: #fff; border: 1px solid #d0d7de; border-radius: 8px; margin: .5rem 0; }
  details.op > summary { cursor: pointer; padding: .6rem 1rem; list-style: none; display: flex; gap: .75rem; align-items: baseline; }
  details.op > summary::before { content: "▸"; color: #57606a; } details.op[open] > summary::before { content: "▾"; }
  code { font-family: ui-monospace, monospace; background: #eff1f3; padding: 0 .25rem; border-radius: 4px; }
  td code { white-space: pre-wrap; word-break: break-word; }
  .method { font: 700 .8rem ui-monospace, monospace; padding: .15rem .5rem; border-radius: 4px; color: #fff; min-width: 4rem; text-align: center; }
  .GET { background: #0969da; } .POST { background: #1a7f37; } .PATCH { background: #9a6700; } .DELETE { background: #cf222e; }
  .path { font: 600 .95rem ui-monospace, monospace; } .summary { color: #57606a; }
  .body { padding: 0 1rem 1rem; border-top: 1px solid #eaeef2; }
  label { display: block; margin: .6rem 0 .2rem; font-weight: 600; font-size: .9rem; }
  input, textarea { box-sizing: border-box; font: .9rem ui-monospace, monospace; padding: .35rem; border: 1px solid #d0d7de; border-radius: 6px; }
  textarea { width: 100%; min-height: 5.5rem; }
  button { margin-top: .75rem; padding: .4rem 1rem; border: 0; border-radius: 6px; background: #1f883d; color: #fff; font-weight: 600; cursor: pointer; }
  pre { background: #f6f8fa; border: 1px solid #eaeef2; border-radius: 6px; padding: .6rem; overflow: auto; white-space: pre-wrap; word-break: break-word; }
  table { border-collapse: collapse; width: 100%; font-size: .88rem; } td { border-top: 1px solid #eaeef2; padding: .3rem .4rem; vertical-align: top; }
  td.status { font: 700 .85rem ui-monospace, monospace; width: 3.5rem; }
</style>
</head>
<body>
<h1>Notes API</h1>
<p class="lead" id="description">Loading the reference from <a href="/openapi.json">/openapi.json</a>…</p>
<div class="auth">
  <label for="bearer">Login token (sent as <code>Authorization: Bearer …</code> when filled; needed by /notes only with NOTES_AUTH=required)</label>
  <input id="bearer" placeholder="paste the token from POST /auth/login">
</div>
<section id="shared" hidden><h2>Parameters of many operations</h2></section>
<main id="operations"></main>
<script>
(async function () {
  const spec = await (await fetch("/openapi.json")).json();
  const main = document.getElementById("operations");
  const el = (tag, props = {}, ...children) => {
    const node = Object.assign(document.createElement(tag), props);
    node.append(...children);
    return node;
  };
  // Descriptions use \`code\` spans: shown as <code>, never parsed as HTML.
  const rich = (text) => String(text || "").split("\u0060").map((part, i) => (i % 2 ? el("code", { textContent: part }) : part));
  document.getElementById("description").replaceChildren(...rich(spec.info.description));
  // A local reference ("#/components/parameters/Bookmark") is replaced by what it points at.
  const resolve = (node) => {
    for (let seen = 0; node && typeof node.$ref === "string" && seen < 10; seen++) {
      node = node.$ref.slice(node.$ref.indexOf("/") + 1).split("/").reduce((at, key) => at && at[key.replace(/~1/g, "/").replace(/~0/g, "~")], spec);
    }
    return node;
  };
  // A parameter many operations share (a $ref to components.parameters) is explained once, here, and each
  // operation's field links to it: its paragraph would otherwise repeat on every operation.
  const shared = document.getElementById("shared");
  for (const [key, p] of Object.entries((spec.components && spec.components.parameters) || {})) {
    shared.append(el("p", { id: "param-" + key }, el("code", { textContent: p.name }), " (" + p.in + "): ", ...rich(p.description)));
    shared.hidden = false;
  }
  const sharedKey = (p) => (p && typeof p.$ref === "string" && p.$ref.startsWith("#/components/parameters/") ? p.$ref.slice(24) : undefined);
  const sections = new Map();
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const method of ["get", "post", "patch", "delete"]) {
      const op = item[method];
      if (!op) continue;
      const tag = (op.tags || ["other"])[0];
      if (!sections.has(tag)) {
        sections.set(tag, el("section", { id: "tag-" + tag }, el("h2", { textContent: tag })));
        main.append(sections.get(tag));
      }
      const parameters = [...(item.parameters || []), ...(op.parameters || [])]
        .map((p) => { const resolved = resolve(p); return resolved && Object.assign({}, resolved, { shared: sharedKey(p) }); })
        .filter(Boolean);
      sections.get(tag).append(operation(method.toUpperCase(), path, op, parameters));
    }
  }

  function operation(method, path, op, parameters) {
    const id = (method + " " + path).replace(/[^a-z0-9]+/gi, "-").toLowerCase();
    const fields = parameters.map((p) => {
      const input = el("input", { name: p.name, placeholder: p.in === "path" ? "required" : "optional" });
      input.dataset.in = p.in;
      const about = p.shared ? [" — ", el("a", { href: "#param-" + p.shared, textContent: "see above" })] : p.description ? [" — ", ...rich(p.description)] : [];
      return el("div", {}, el("label", {}, p.name + " (" + p.in + ")", ...about), input);
    });
    const requestBody = resolve(op.requestBody);
    const media = requestBody && requestBody.content && requestBody.content["application/json"];
    const body = media ? el("textarea", { name: "body", value: JSON.stringify(media.example, null, 2) }) : null;
    const result = el("pre", { className: "result", hidden: true });
    const send = el("button", { type: "button", textContent: "Send request" });
    send.addEventListener("click", async () => {
      let url = path;
      const query = new URLSearchParams();
      const headers = {};
      for (const input of send.parentElement.querySelectorAll("input[data-in]")) {
        if (input.dataset.in === "path") url = url.replace("{" + input.name + "}", encodeURIComponent(input.value));
        else if (input.value === "") continue;
        else if (input.dataset.in === "header") headers[input.name] = input.value;
        else if (input.dataset.in === "query") query.set(input.name, input.value);
      }
      if (String(query)) url += "?" + query;
      if (body) headers["Content-Type"] = "application/json";
      const token = document.getElementById("bearer").value.trim();
      if (token) headers.Authorization = "Bearer " + token;
      result.hidden = false;
      result.textContent = "…";
      delete result.dataset.status; // set again once this answer is shown
      try {
        const response = await fetch(url, { method, headers, body: body ? body.value : undefined });
        const text = await response.text();
        let shown = text;
        try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch {}
        const extra = ["content-type", "link", "retry-after", "x-d1-bookmark"].filter((h) => response.headers.get(h)).map((h) => h + ": " + response.headers.get(h));
        result.textContent = method + " " + url + "\\n" + response.status + " " + response.statusText + "\\n" + extra.join("\\n") + "\\n\\n" + shown;
        result.dataset.status = String(response.status);
        if (method === "POST" && path === "/auth/login" && response.ok) document.getElementById("bearer").value = JSON.parse(text).token;
      } catch (err) {
        result.textContent = "Request failed: " + err;
      }
    });
    const responses = el("table", {}, ...Object.entries(op.responses).map(([status, reference]) => {
      const r = resolve(reference) || {};
      const content = r.content && Object.values(r.content)[0];
      const sample = content && (content.example !== undefined ? content.example : Object.values(content.examples || {}).map((e) => e.value)[0]);
      const example = sample === undefined ? "" : typeof sample === "string" ? sample : JSON.stringify(sample);
      return el("tr", {}, el("td", { className: "status", textContent: status }), el("td", {}, ...rich(r.description)), el("td", {}, example ? el("code", { textContent: example }) : ""));
    }));
    const schema = media ? el("pre", { textContent: JSON.stringify(media.schema, null, 2) }) : "";
    return el("details", { className: "op", id },
      el("summary", {}, el("span", { className: "method " + method, textContent: method }), el("span", { className: "path", textContent: path }), el("span", { className: "summary", textContent: op.summary })),
      el("div", { className: "body" },
        el("p", {}, ...rich(op.description)),
        ...(media ? [el("label", { textContent: "Request body schema" }), schema] : []),
        el("form", { onsubmit: (event) => event.preventDefault() }, ...fields, ...(body ? [el("label", { textContent: "Request body" }), body] : []), send),
        result,
        el("label", { textContent: "Responses" }), responses));
  }
  document.body.dataset.ready = "true";
})();
</script>
</body>
</html>
`;

/**
 * The page's Content-Security-Policy: its own inline style and script, named by their SHA-256, and nothing
 * else but requests to this origin (the document and the forms' calls) and its empty `data:` icon (lib/page.ts).
 */
export function docsContentSecurityPolicy(): Promise<string> {
  return inlinePagePolicy(DOCS_HTML);
}
