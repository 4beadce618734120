// hpn dashboard: charts, run picking, the fabric explorer, the new-run form. No libraries
// but plotly.js (served locally by the dashboard).
"use strict";
const $ = (s, el = document) => el.querySelector(s);
const $$ = (s, el = document) => [...el.querySelectorAll(s)];
const esc = (t) => String(t).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
const fmt = (v) => v === null || v === undefined ? "" : typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toPrecision(4)) : esc(v);

async function getJSON(url, opts) {
  const r = await fetch(url, opts);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || body.detail || r.statusText);
  return body;
}

function charts() {
  for (const el of $$(".chart[data-chart]")) {
    getJSON(el.dataset.chart).then((fig) => {
      Plotly.newPlot(el, fig.data, fig.layout, {responsive: true});
      el.dataset.ready = "1";
    }).catch((e) => { el.textContent = "chart failed: " + e.message; });
  }
}

function picker() {
  const btn = $("#compare-btn");
  if (!btn) return;
  const picked = () => $$(".pick").filter((c) => c.checked).map((c) => c.value);
  for (const c of $$(".pick")) c.addEventListener("change", () => { btn.disabled = picked().length !== 2; });
  btn.addEventListener("click", () => {
    const [a, b] = picked();
    location.href = `/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`;
  });
}

const COLORS = {0: "#1f77b4", 1: "#ff7f0e"};

function fabric() {
  const box = $("#fabric");
  if (!box) return;
  const src = JSON.parse(box.dataset.src);
  const st = {view: src.view === "pod" ? "pod" : "segment", pod: 0, segment: 0};
  const q = (extra) => {
    const p = new URLSearchParams(src.run ? {run: src.run} : {preset: $("#preset").value});
    for (const [k, v] of Object.entries(extra || {})) p.set(k, v);
    return p.toString();
  };
  const options = (sel, values, cur) => { sel.innerHTML = values.map((s) => `<option${s === cur ? " selected" : ""}>${s}</option>`).join(""); };
  const swShape = (n, w, h, r) => {
    const t = `<title>${esc(n.label)}</title>`;
    const c = COLORS[n.plane] || "#2ca02c";
    const attrs = `class="sw ${n.kind}" data-id="${n.id}" data-label="${esc(n.label)}" fill="${c}"`;
    if (n.kind === "tor") return `<rect ${attrs} x="${n.x - w / 2}" y="${n.y - h / 2}" width="${w}" height="${h}">${t}</rect>`;
    return `<circle ${attrs} cx="${n.x}" cy="${n.y}" r="${r}">${t}</circle>`;
  };
  function controls(v) {
    options($("#pod"), [...Array(v.pods).keys()], v.pod);
    options($("#segment"), v.segments, v.segment);
    $("#segment-label").hidden = st.view === "pod";
    for (const b of $$("#view-toggle button")) b.classList.toggle("on", b.dataset.view === st.view);
    box.dataset.view = st.view;
  }
  async function drawSegment() {
    const v = await getJSON(`/api/fabric?${q({pod: st.pod, segment: st.segment})}`);
    controls(v);
    $("#counts").textContent = `${v.preset}: ${v.counts.aggs} Aggs, ${v.counts.tors} ToRs, ${v.counts.hosts} hosts (${v.counts.backup_hosts} backup) in segment ${v.segment}`;
    const pos = new Map(v.nodes.map((n) => [String(n.id), n]));
    const lines = v.links.map((l) => {
      const a = pos.get(String(l.a)), b = pos.get(String(l.b));
      return `<line x1="${a.x}" y1="${a.y}" x2="${b.x}" y2="${b.y}" stroke="${l.tier === "tor_agg" ? "#9bb" : "#ccc"}" stroke-width="0.4"/>`;
    }).join("");
    const shapes = v.nodes.map((n) => {
      if (n.kind === "host") return `<rect class="host" x="${n.x - 2.5}" y="${n.y}" width="5" height="12" fill="${n.backup ? "#fff" : "#555"}" stroke="#555" data-label="${esc(n.label)}"><title>${esc(n.label)}</title></rect>`;
      if (n.kind === "tor") return `<g>${swShape(n, 24, 18)}<text x="${n.x}" y="${n.y + 24}" font-size="9" text-anchor="middle">r${n.rail}</text></g>`;
      return swShape(n, 0, 0, 5);
    }).join("");
    box.innerHTML = `<svg viewBox="0 0 1000 640"><text x="4" y="20" font-size="12">Aggs</text><text x="4" y="300" font-size="12">ToRs</text><text x="4" y="590" font-size="12">hosts</text>${lines}${shapes}</svg>`;
    for (const el of $$(".sw", box)) el.addEventListener("click", () => showSwitch(el));
  }
  async function drawPod() {
    const v = await getJSON(`/api/fabric/pod?${q({pod: st.pod})}`);
    controls(v);
    const c = v.counts;
    $("#counts").textContent = `${v.preset}: ${c.cores ? c.cores + " cores, " : ""}${c.aggs} Aggs, ${c.tors} ToRs in ${c.segments} segments, ${c.hosts} hosts (${c.backup_hosts} backup) in pod ${v.pod}`;
    const most = Math.max(1, ...v.bundles.map((b) => b.links));
    const lines = v.bundles.map((b) => {
      const color = b.tier === "tor_agg" ? "#9bb" : "#bb9";
      const title = `<title>${b.links} ${b.tier} links to ${b.reaches ?? 1} switches, ${fmt(b.capacity_gbps)} Gbps</title>`;
      if (b.x2_lo !== undefined && b.x2_hi > b.x2_lo) {  // fans out to every switch it reaches
        return `<polygon class="bundle" points="${b.x1},${b.y1} ${b.x2_lo},${b.y2} ${b.x2_hi},${b.y2}" fill="${color}" fill-opacity="${(0.06 + 0.2 * b.links / most).toFixed(3)}" stroke="${color}" stroke-opacity="0.5" stroke-width="0.5">${title}</polygon>`;
      }
      return `<line class="bundle" x1="${b.x1}" y1="${b.y1}" x2="${b.x2}" y2="${b.y2}" stroke="${color}" stroke-opacity="0.5" stroke-width="${(0.5 + 3 * b.links / most).toFixed(2)}">${title}</line>`;
    }).join("");
    const tw = Math.max(2, Math.min(24, ...v.segment_boxes.map((s) => s.w / 2 - 4)));
    const shapes = v.nodes.map((n) => swShape(n, tw, 9, n.kind === "core" ? 4 : 3)).join("");
    const segs = v.segment_boxes.map((s) => `<text x="${s.x + s.w / 2}" y="${s.label_y}" font-size="10" text-anchor="middle">seg ${s.segment}</text><g class="segbox" data-segment="${s.segment}"><rect x="${s.x}" y="${s.y}" width="${s.w}" height="${s.h}" fill="#eee" stroke="#555"/><text x="${s.x + s.w / 2}" y="${s.y + 12}" font-size="9" text-anchor="middle">${s.hosts} hosts</text><text x="${s.x + s.w / 2}" y="${s.y + 24}" font-size="9" text-anchor="middle">+${s.backup_hosts} backup</text><title>segment ${s.segment}: ${s.tors} ToRs, ${s.hosts} active + ${s.backup_hosts} backup hosts; click to open</title></g>`).join("");
    const top = c.cores ? `<text x="4" y="14" font-size="12">cores</text><text x="4" y="104" font-size="12">Aggs</text>` : `<text x="4" y="14" font-size="12">Aggs</text>`;
    box.innerHTML = `<svg viewBox="0 0 1000 ${v.height}">${top}${lines}${segs}${shapes}</svg>`;
    for (const el of $$(".sw", box)) el.addEventListener("click", () => showSwitch(el));
    for (const el of $$(".segbox", box)) el.addEventListener("click", () => { st.segment = Number(el.dataset.segment); setView("segment"); });
  }
  const draw = () => (st.view === "pod" ? drawPod() : drawSegment()).catch((e) => { box.textContent = "fabric failed: " + e.message; });
  const setView = (view) => { st.view = view; draw(); };
  async function showSwitch(el) {
    for (const s of $$(".sel", box)) s.classList.remove("sel");
    el.classList.add("sel");
    const s = await getJSON(`/api/fabric/switch/${el.dataset.id}?${q()}`);
    const rows = s.ports.map((p) => `<tr><td>${p.link}</td><td>${p.direction}</td><td>${esc(p.peer)}</td><td>${p.tier}</td><td>${fmt(p.capacity_gbps)}</td><td class="util">${p.util_mean === null ? "" : (100 * p.util_mean).toFixed(1) + " %"}</td><td>${p.util_peak === null ? "" : (100 * p.util_peak).toFixed(1) + " %"}</td></tr>`).join("");
    const note = s.has_utilization ? "" : `<p class="muted">no link utilization: ${src.run ? "this run has no links table" : "pick a run to see it"}</p>`;
    $("#switch").innerHTML = `<h2 id="switch-name">${esc(s.name)}</h2><p>${s.kind}, ${s.ports.length} directed links</p>${note}<table class="ports"><thead><tr><th>link</th><th>dir</th><th>peer</th><th>tier</th><th>Gbps</th><th>mean util</th><th>peak util</th></tr></thead><tbody>${rows}</tbody></table>`;
  }
  for (const b of $$("#view-toggle button")) b.addEventListener("click", () => setView(b.dataset.view));
  $("#segment").addEventListener("change", (e) => { st.segment = Number(e.target.value); draw(); });
  $("#pod").addEventListener("change", (e) => { st.pod = Number(e.target.value); st.segment = 0; draw(); });
  $("#preset").addEventListener("change", () => {
    st.pod = 0; st.segment = 0;
    if ($("#source")) $("#source").textContent = $("#preset").value;
    draw();
  });
  draw();
}

function newRun() {
  const form = $("#new-run");
  if (!form) return;
  let commands = [];
  const pick = () => {
    const c = commands.find((x) => x.name === $("#command").value);
    $("#config").value = c.example_toml;
    const lim = c.limits.join("; ");
    $("#summary").textContent = c.summary + (lim ? ` Limits: ${lim}.` : "");
  };
  getJSON("/api/commands").then((d) => {
    commands = d.commands;
    $("#command").innerHTML = commands.map((c) => `<option>${esc(c.name)}</option>`).join("");
    pick();
  });
  $("#command").addEventListener("change", pick);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const out = $("#job");
    try {
      let job = await getJSON("/api/jobs", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({command: $("#command").value, config_toml: $("#config").value})});
      while (job.status === "queued" || job.status === "running") {
        out.innerHTML = `<p class="status">${job.status} · ${job.elapsed_s.toFixed(1)} s <progress></progress></p>`;
        await new Promise((r) => setTimeout(r, 300));
        job = await getJSON(`/api/jobs/${job.id}`);
      }
      out.innerHTML = job.status === "done"
        ? `<p class="status">done in ${job.elapsed_s.toFixed(2)} s: <a id="new-run-link" href="/runs/${encodeURIComponent(job.run_id)}">${esc(job.run_id)}</a></p>`
        : `<p class="status error">failed: ${esc(job.error)}</p>`;
    } catch (err) {
      out.innerHTML = `<p class="status error">${esc(err.message)}</p>`;
    }
  });
}

document.addEventListener("DOMContentLoaded", () => { charts(); picker(); fabric(); newRun(); });
