// brain-search power-user page: plain JS over the public API (POST /v1/recall, GET /v1/nodes,
// POST /v1/recall/{recall_id}/feedback, GET /v1/feedback/summary).
// The API key is typed in by the user and kept in this browser's localStorage only.
"use strict";

const KEY_STORE = "brain-search.api-key";
// Spec 5.3 presentation of the spec 3.4 tiers, headed by the response field's own words (as the CLI).
const TIERS = [
  ["exact_matches", "🎯 Exact matches", "Z < 0.3", (z) => z < 0.3],
  ["precise_matches", "📍 Precise matches", "Z 0.3–0.5", (z) => z >= 0.3 && z < 0.5],
  ["semantic_matches", "💭 Semantic matches", "Z 0.5–0.7", (z) => z >= 0.5 && z < 0.7],
  ["conceptual_matches", "🌐 Conceptual matches", "Z ≥ 0.7", (z) => z >= 0.7],
];

const $ = (id) => document.getElementById(id);
const ui = {
  key: $("api-key"), keyStatus: $("key-status"), query: $("query"), slider: $("z-slider"), auto: $("auto"),
  readout: $("z-readout"), intent: $("intent"), nodeInput: $("node-input"), nodeOptions: $("node-options"),
  chips: $("node-chips"), expand: $("expand"), limit: $("limit"), analysis: $("analysis"), error: $("error"),
  results: $("results"), tpl: $("result-tpl"), rate: $("rate"), rateStatus: $("rate-status"),
  satisfaction: $("satisfaction"), context: $("context"), conversations: $("conversations"),
};
// feedback: the rating and marks given on the recall shown (cleared by a new recall)
const state = { nodes: [], picked: [], seq: 0, last: null, rating: null, marks: {}, sent: 0 };

function apiKey() { return localStorage.getItem(KEY_STORE) || ""; }

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (apiKey()) headers.Authorization = `Bearer ${apiKey()}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) {
    const d = data.detail;
    const msg = Array.isArray(d) ? d.map((e) => `${(e.loc || []).slice(1).join(".")}: ${e.msg}`).join("; ") : d;
    const err = new Error(r.status === 401 ? `API key rejected (${msg || "401"})` : `${r.status}: ${msg || r.statusText}`);
    err.status = r.status;
    throw err;
  }
  return data;
}

function setPhase(phase) {
  document.body.dataset.phase = phase;
}

function showError(msg) {
  ui.error.hidden = !msg;
  ui.error.textContent = msg || "";
}

// ---------------------------------------------------------------- key and nodes
async function loadNodes() {
  if (!apiKey()) { ui.keyStatus.textContent = "no key"; return; }
  try {
    const data = await api("GET", "/v1/nodes?limit=1000");
    state.nodes = data.nodes.map((n) => n.label);
    ui.nodeOptions.replaceChildren(...state.nodes.map((l) => Object.assign(document.createElement("option"), { value: l })));
    ui.keyStatus.textContent = `key ok · ${state.nodes.length} node(s)`;
  } catch (e) {
    ui.keyStatus.textContent = e.status === 401 ? "key rejected" : "nodes unavailable";
  }
}

function renderChips() {
  ui.chips.replaceChildren(...state.picked.map((label) => {
    const chip = document.createElement("span");
    chip.className = "chip";
    chip.dataset.testid = "node-chip";
    chip.textContent = label;
    const x = document.createElement("button");
    x.type = "button";
    x.textContent = "×";
    x.title = `remove ${label}`;
    x.onclick = () => { state.picked = state.picked.filter((l) => l !== label); renderChips(); rerun(); };
    chip.append(x);
    return chip;
  }));
}

function addNode() {
  const label = ui.nodeInput.value.trim().replace(/^\/+|\/+$/g, "");
  if (!label) return;
  if (state.nodes.length && !state.nodes.includes(label)) { showError(`unknown node ${label}`); return; }
  if (!state.picked.includes(label)) state.picked.push(label);
  ui.nodeInput.value = "";
  showError("");
  renderChips();
  rerun();
}

// ---------------------------------------------------------------- precision slider
function syncSlider() {
  ui.slider.disabled = ui.auto.checked;
  ui.readout.textContent = ui.auto.checked
    ? `Z target: auto${state.last ? ` → ${state.last.query_analysis.target_z.toFixed(2)}` : ""}`
    : `Z target: ${Number(ui.slider.value).toFixed(2)}`;
}

function recallBody() {
  const body = {
    query: ui.query.value,
    focus: "auto",
    limit: Math.max(1, Math.min(100, Number(ui.limit.value) || 10)),
    tiered: currentView() === "tiered",
  };
  if ($("superseded").checked) body.include_superseded = true;
  if ($("strict").checked) body.strict = true;
  if ($("time-words").checked) body.time_words = true;
  if (ui.context.value !== "") body.context = Math.max(0, Math.min(5, Math.round(Number(ui.context.value)) || 0));
  if (!ui.auto.checked) body.z_value = Number(ui.slider.value);
  if (state.picked.length) {
    body.nodes = [...state.picked];
    const depth = Number(ui.expand.value) || 0;
    if (depth > 0) body.expand_related = depth;
  }
  return body;
}

function currentView() { return document.querySelector("input[name=view]:checked").value; }

// ---------------------------------------------------------------- recall
async function search() {
  if (!ui.query.value.trim()) return;
  const seq = ++state.seq;
  setPhase("loading");
  try {
    const data = await api("POST", "/v1/recall", recallBody());
    if (seq !== state.seq) return; // a newer search superseded this one
    state.last = data;
    state.rating = null;
    state.marks = {};
    showError("");
    render();
    setPhase("done");
  } catch (e) {
    if (seq !== state.seq) return;
    showError(e.message);
    ui.results.replaceChildren();
    ui.conversations.hidden = true;
    ui.analysis.hidden = true; // the analysis belongs to a result: none now
    ui.rate.hidden = true;
    setPhase("error");
  }
  document.body.dataset.seq = String(seq);
}

function rerun() { if (ui.query.value.trim()) search(); }

function render() {
  const data = state.last;
  if (!data) return;
  const qa = data.query_analysis;
  ui.intent.textContent = `${qa.detected_intent} · conf ${qa.confidence.toFixed(2)}`;
  ui.intent.dataset.intent = qa.detected_intent;
  if (ui.auto.checked) ui.slider.value = String(qa.target_z);
  syncSlider();
  renderAnalysis(data);
  renderRating();
  renderConversations(data.conversations);
  const banner = nothingBanner(qa);
  if (!data.results.length) {
    ui.results.replaceChildren(banner || Object.assign(document.createElement("p"), { className: "muted", textContent: "No memories matched." }));
    return;
  }
  if (currentView() === "tiered") ui.results.replaceChildren(...renderTiers(data, banner));
  else ui.results.replaceChildren(...(banner ? [banner] : []), ...rankedCards(data.results));
}

// the floor, in both views: a banner when nothing cleared it, and in the ranked list a rule
// above the first result that does not clear it (the closest memories, none of them a match)
function nothingBanner(qa) {
  if (!qa.nothing_matched) return null;
  const p = Object.assign(document.createElement("p"), {
    className: "nothing",
    textContent: `Nothing matched: no memory clears the relevance floor (best match ${(qa.best_match ?? 0).toFixed(2)}, floor ${(qa.floor ?? 0).toFixed(2)}).`,
  });
  p.dataset.testid = "nothing-matched";
  return p;
}

function rankedCards(results) {
  const out = [];
  let ruled = false;
  for (const r of results) {
    if (!ruled && r.scores.clears_floor === false) {
      const rule = Object.assign(document.createElement("p"), { className: "floor-rule", textContent: "below the relevance floor: not a match" });
      rule.dataset.testid = "floor-rule";
      out.push(rule);
      ruled = true;
    }
    out.push(card(r));
  }
  return out;
}

// how many memories match (clear the floor), never a bare count of what is shown beside "Nothing
// matched": without strict the list fills with the closest memories, none of them a match
function matchedText(qa, shown) {
  const matched = qa.matched ?? (qa.nothing_matched ? 0 : shown);
  if (matched === 0) return shown ? `0 (${shown} closest shown)` : "0";
  const withheld = qa.withheld_matches ? ` · ${qa.withheld_matches} withheld by min relevance` : "";
  return `${matched}${withheld}`;
}

function renderAnalysis(data) {
  const qa = data.query_analysis;
  const items = [
    ["intent", qa.detected_intent], ["target Z", qa.target_z.toFixed(2)], ["± tolerance", qa.z_tolerance.toFixed(2)],
    ["confidence", qa.confidence.toFixed(2)], ["from", qa.source || "auto"],
    ["cues", (qa.cues || []).join(", ") || "—"], ["matched", matchedText(qa, data.results.length)],
    ["best match", (qa.best_match ?? 0).toFixed(2)], ["Z formula", qa.z_formula || "calibrated"],
  ];
  const tr = qa.time_range;
  if (tr) {
    const day = (t) => (t ? t.slice(0, 10) : "…");
    const said = tr.words && tr.words.length ? ` (“${tr.words.join("”, “")}”)` : "";
    items.push(["when", `${day(tr.since)} → ${day(tr.until)}${said}`]);
  }
  if (data.timings) items.push(["time", `${data.timings.total_ms.toFixed(1)} ms`]);
  ui.analysis.replaceChildren(...items.map(([k, v]) => {
    const s = document.createElement("span");
    s.append(`${k}: `, Object.assign(document.createElement("b"), { textContent: v }));
    return s;
  }));
  ui.analysis.hidden = false;
}

// The hits grouped by conversation (the response's `conversations`, when the query asked for a
// conversation or `context` was set): each one's turns around its best hit, the hits marked.
function renderConversations(convs) {
  ui.conversations.hidden = !convs;
  if (!convs) { ui.conversations.replaceChildren(); return; }
  const h = Object.assign(document.createElement("h2"), { textContent: `💬 Conversations · ${convs.length}` });
  ui.conversations.replaceChildren(h, ...convs.map((c, i) => {
    const el = document.createElement("details");
    el.className = "conversation";
    el.dataset.testid = "conversation";
    el.dataset.id = c.conversation_id;
    el.open = i === 0; // the best one open, the others a click away
    const sum = document.createElement("summary");
    const node = c.node && (c.node.label || c.node.id);
    sum.append(Object.assign(document.createElement("b"), { textContent: c.conversation_id }),
      `${node ? ` · ${node}` : ""} · score ${c.score.toFixed(2)} · ${c.hits.length} hit(s) · ${c.turns_total} turn(s)`);
    const list = document.createElement("ol");
    list.append(...c.turns.map((t) => {
      const li = document.createElement("li");
      li.dataset.testid = "turn";
      li.dataset.id = t.id;
      if (t.hit) li.className = "hit";
      const when = fmtDate(t.timestamp);
      if (when) li.append(Object.assign(document.createElement("span"), { className: "when", textContent: when }));
      li.append(t.content);
      return li;
    }));
    el.append(sum, list);
    return el;
  }));
}

function renderTiers(data, banner) {
  // the tiers hold only memories above the relevance floor: the banner says so instead of noise
  const sections = banner ? [banner] : [];
  return sections.concat(TIERS.map(([field, title, range, inTier]) => {
    const items = data.tiers ? data.tiers[field] || [] : data.results.filter((r) => inTier(r.scores.z_position));
    const sec = document.createElement("section");
    sec.className = "tier";
    sec.dataset.testid = `tier-${field}`;
    const h = document.createElement("h2");
    h.append(`${title} `, Object.assign(document.createElement("span"), { className: "count", textContent: `(${range}) · ${items.length}` }));
    sec.append(h);
    if (!items.length) sec.append(Object.assign(document.createElement("p"), { className: "empty", textContent: "none" }));
    sec.append(...items.map(card));
    return sec;
  }));
}

function fmtDate(ts) {
  if (!ts) return "";
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return "";
  const opts = { month: "short", day: "numeric", timeZone: "UTC" };
  if (d.getUTCFullYear() !== new Date().getUTCFullYear()) opts.year = "numeric";
  return d.toLocaleDateString("en-US", opts);
}

function card(r) {
  const el = ui.tpl.content.firstElementChild.cloneNode(true);
  const s = r.scores;
  el.dataset.id = r.id;
  el.dataset.z = String(s.z_position);
  el.querySelector(".node").textContent = (r.node && (r.node.label || r.node.id)) || "—";
  const date = fmtDate(r.metadata && r.metadata.timestamp);
  el.querySelector(".date").textContent = date ? `[${date}]` : "";
  el.querySelector(".relevance").textContent = `relevance ${s.relevance.toFixed(2)}`;
  if (s.clears_floor === false) el.classList.add("below-floor");
  el.querySelector(".kind").textContent = r.match_kind ? `${r.match_kind} · match ${(s.match ?? 0).toFixed(2)}` : "";
  el.dataset.kind = r.match_kind || "";
  el.querySelector(".content").textContent = r.content;
  const m = r.metadata || {};
  const expired = m.valid_until && new Date(m.valid_until) < new Date();
  if (m.superseded_by || expired) {
    const badge = el.querySelector(".superseded");
    badge.hidden = false;
    badge.textContent = m.superseded_by ? `superseded by ${m.superseded_by}` : "no longer valid";
    el.classList.add("is-superseded");
  }
  for (const [cls, relevant] of [["up", true], ["down", false]]) {
    const b = el.querySelector(`.thumbs .${cls}`);
    b.setAttribute("aria-pressed", String(state.marks[r.id] === relevant));
    b.onclick = () => sendFeedback({ results: [{ memory_id: r.id, relevant }] });
  }
  el.querySelector(".marker").style.left = `${(s.z_position * 100).toFixed(1)}%`;
  el.querySelector(".zval").textContent = s.z_position.toFixed(2);
  for (const [cls, v] of [["lexical", s.lexical], ["semantic", s.semantic]]) {
    const box = el.querySelector(`.${cls}`);
    box.querySelector(".bar div").style.width = `${(v * 100).toFixed(1)}%`;
    box.querySelector("b").textContent = v.toFixed(2);
  }
  return el;
}

// ---------------------------------------------------------------- feedback
function renderRating() {
  ui.rate.hidden = !state.last || !state.last.recall_id;
  for (const b of ui.rate.querySelectorAll("[data-star]")) b.classList.toggle("on", Number(b.dataset.star) <= (state.rating || 0));
}

async function sendFeedback(body) {
  const data = state.last;
  if (!data || !data.recall_id) return;
  try {
    const answer = await api("POST", `/v1/recall/${encodeURIComponent(data.recall_id)}/feedback`, body);
    if (data !== state.last) return; // a newer recall replaced the one rated
    state.rating = answer.rating;
    state.marks = Object.fromEntries(answer.results.map((m) => [m.memory_id, m.relevant]));
    ui.rateStatus.textContent = `thanks · ${answer.rating ? `${answer.rating}/5` : "not rated"} · ${answer.results.length} marked`;
    for (const el of ui.results.querySelectorAll("[data-testid=result]")) {
      el.querySelector(".up").setAttribute("aria-pressed", String(state.marks[el.dataset.id] === true));
      el.querySelector(".down").setAttribute("aria-pressed", String(state.marks[el.dataset.id] === false));
    }
    renderRating();
    if (!ui.satisfaction.hidden) await loadSummary();
  } catch (e) {
    ui.rateStatus.textContent = e.message;
  }
  document.body.dataset.feedback = String(++state.sent);
}

const pct = (s) => (s && s.share !== null ? `${Math.round(s.share * 100)}% of ${s.marked}` : "—");

async function loadSummary() {
  try {
    const s = await api("GET", "/v1/feedback/summary");
    const r = s.rating;
    const head = document.createElement("p");
    head.dataset.testid = "summary-rating";
    head.textContent = r.mean === null
      ? `No ratings in the last ${s.days} days (${s.recalls_kept} recalls kept).`
      : `Mean rating ${r.mean.toFixed(2)} / 5 (95 % ${r.low.toFixed(2)}–${r.high.toFixed(2)}) from ${r.count} rated · ${s.recalls_kept} recalls kept · relevant ${pct(s.relevant)}`;
    const table = document.createElement("table");
    const rows = [["", "relevant"], ...Object.entries(s.relevant_by_tier).map(([k, v]) => [k, pct(v)]),
      ...Object.entries(s.relevant_by_intent).map(([k, v]) => [`intent ${k}`, pct(v)])];
    for (const [i, [k, v]] of rows.entries()) {
      const tr = table.insertRow();
      for (const text of [k, v]) tr.append(Object.assign(document.createElement(i ? "td" : "th"), { textContent: text }));
    }
    const worst = document.createElement("ol");
    worst.dataset.testid = "summary-worst";
    worst.append(...s.worst.map((w) => Object.assign(document.createElement("li"), { textContent: `${"★".repeat(w.rating)} ${w.query}` })));
    ui.satisfaction.replaceChildren(head, table, Object.assign(document.createElement("p"), { textContent: "Worst-rated recent queries:" }), worst);
    ui.satisfaction.hidden = false;
  } catch (e) {
    ui.satisfaction.replaceChildren(Object.assign(document.createElement("p"), { textContent: e.message }));
    ui.satisfaction.hidden = false;
  }
  document.body.dataset.summary = String(Number(document.body.dataset.summary || 0) + 1);
}

for (const b of ui.rate.querySelectorAll("[data-star]")) b.addEventListener("click", () => sendFeedback({ rating: Number(b.dataset.star) }));
$("summary-show").addEventListener("click", loadSummary);

// ---------------------------------------------------------------- wiring
$("key-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const k = ui.key.value.trim();
  if (k) localStorage.setItem(KEY_STORE, k); else localStorage.removeItem(KEY_STORE);
  ui.key.value = "";
  ui.key.placeholder = k ? "key saved (type to replace)" : "bsk_…";
  loadNodes();
  rerun();
});
$("search-form").addEventListener("submit", (ev) => { ev.preventDefault(); search(); });
$("node-add").addEventListener("click", addNode);
ui.nodeInput.addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); addNode(); } });
ui.auto.addEventListener("change", () => { syncSlider(); rerun(); });
$("superseded").addEventListener("change", () => rerun());
$("strict").addEventListener("change", () => rerun());
$("time-words").addEventListener("change", () => rerun());
ui.context.addEventListener("change", () => rerun());
ui.slider.addEventListener("input", syncSlider);
ui.slider.addEventListener("change", rerun);
ui.expand.addEventListener("change", () => { if (state.picked.length) rerun(); });
for (const r of document.querySelectorAll("input[name=view]")) r.addEventListener("change", rerun);

if (apiKey()) ui.key.placeholder = "key saved (type to replace)";
setPhase("idle");
syncSlider();
loadNodes();
