// zkraft's web view: polls /ui/api/state and /ui/api/znode once a second
// and redraws. Everything is inserted as text (never as HTML).
"use strict";

const POLL_MS = 1000;
let browsePath = decodeURIComponent(location.hash.slice(1)) || "/";
let updates = 0;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else if (k === "onclick") e.onclick = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function duration(ms) {
  if (ms < 0) return "–";
  if (ms < 1000) return ms + " ms";
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + (s % 60) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}

function fillBody(table, rows) {
  const body = table.tBodies[0];
  body.replaceChildren(...rows);
}

function renderSelf(s) {
  const facts = [
    ["server", s.server_id], ["mode", s.mode], ["raft", s.raft_state],
    ["leader", s.leader_id], ["term", s.term], ["applied", s.applied], ["zxid", s.last_zxid],
  ].filter(([k]) => !(k === "leader" && s.mode === "standalone"));
  document.getElementById("self").replaceChildren(
    ...facts.map(([k, v]) => el("span", { "data-fact": k }, k + " ", el("b", {}, v))));
}

function contenderRow(kind, c, i) {
  const since = kind === "holder" ? c.held_for_ms : c.waiting_for_ms;
  // A node a lock-delay keeps after its session expired: not a live holder.
  const state = c.expired
    ? "expired; lock-delay until " + new Date(c.lock_delay_until).toISOString()
    : (kind === "holder" ? "held " : "waiting ") + duration(since);
  return el("tr", { class: kind + (c.expired ? " expired" : ""), "data-session": c.session_id, "data-node": c.node },
    el("td", {}, kind === "holder" ? "holder" : "waiter " + (i + 1)),
    el("td", { class: "mono" }, c.node),
    el("td", {}, c.mode),
    el("td", { class: "mono" }, c.session_id),
    el("td", { class: "mono" }, c.client_address || "–"),
    el("td", { class: "mono" }, c.token),
    el("td", { "data-state": c.expired ? "expired" : "live" }, state));
}

function renderLocks(l) {
  const box = document.getElementById("locks");
  document.getElementById("locks-note").textContent =
    l.truncated ? "(partial: scan stopped after " + l.scanned_ephemerals + " ephemerals)" : "";
  if (!l.locks.length) {
    box.replaceChildren(el("p", { class: "empty" }, "no locks held"));
    return;
  }
  box.replaceChildren(...l.locks.map(d => {
    const head = el("tr", {}, ...["", "node", "mode", "session", "client", "token", "for"].map(h => el("th", {}, h)));
    const rows = [...d.holders.map((c, i) => contenderRow("holder", c, i)), ...d.waiters.map((c, i) => contenderRow("waiter", c, i))];
    return el("div", { class: "lock", "data-path": d.path },
      el("h3", {}, el("a", { onclick: () => browse(d.path) }, d.path), " ",
        el("span", { class: "note" }, d.holders.length + " holding, " + d.waiters.length + " waiting" +
          (d.incomplete ? " (incomplete: the truncated scan may have missed contenders; holders may be wrong)" : ""))),
      el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows)));
  }));
}

function renderMembers(ms) {
  fillBody(document.getElementById("members"), ms.map(m => el("tr", { "data-member": m.id },
    el("td", {}, m.id + (m.self ? " (this)" : "")),
    el("td", { class: "mono" }, m.address + (m.peer_port ? ":" + m.peer_port : "")),
    el("td", { class: "mono" }, m.client_address || (m.client_port ? m.address + ":" + m.client_port : "–")),
    el("td", { class: "role-" + m.role }, m.role),
    el("td", {}, m.self ? "–" : (m.unreachable ? "unreachable, " : "") + duration(m.last_contact_ms_ago)))));
}

function renderSessions(ss) {
  document.getElementById("sessions-note").textContent = "(" + ss.length + ")";
  fillBody(document.getElementById("sessions"), ss.map(s => el("tr", { "data-session": s.session_id },
    el("td", { class: "mono" }, s.session_id),
    el("td", { class: "mono" }, s.client_address || "–"),
    el("td", {}, duration(s.timeout_ms)),
    el("td", {}, duration(s.expires_in_ms)),
    el("td", {}, s.ephemerals))));
}

function browse(path) {
  browsePath = path;
  location.hash = encodeURIComponent(path);
  pollZnode();
}

function childPath(parent, name) { return parent === "/" ? "/" + name : parent + "/" + name; }

function renderZnode(z) {
  const crumbs = [el("a", { onclick: () => browse("/") }, "/")];
  let acc = "";
  for (const part of z.path.split("/").filter(Boolean)) {
    acc += "/" + part;
    const p = acc;
    crumbs.push(el("a", { onclick: () => browse(p) }, part), " / ");
  }
  document.getElementById("crumbs").replaceChildren(...crumbs);
  const list = document.getElementById("children");
  const data = document.getElementById("data");
  if (z.error) {
    list.replaceChildren();
    fillBody(document.getElementById("stat"), [el("tr", {}, el("td", {}, z.error))]);
    data.textContent = "";
    return;
  }
  const kids = z.children.map(c => el("li", {}, el("a", { onclick: () => browse(childPath(z.path, c)) }, c)));
  if (z.children_truncated) kids.push(el("li", { class: "note" }, "… more not shown"));
  list.replaceChildren(...kids);
  const show = (k, v) => (k === "ctime" || k === "mtime") && v > 0 ? v + " (" + new Date(v).toISOString() + ")" : v;
  fillBody(document.getElementById("stat"), Object.entries(z.stat).map(([k, v]) =>
    el("tr", {}, el("th", {}, k), el("td", { class: "mono" }, show(k, v)))));
  data.textContent = z.data_hidden ? "(data not shown: the ACL does not let world:anyone read it)"
    : z.data === null ? "(null)" : (z.data_encoding === "hex" ? "hex: " : "") + z.data;
}

function setStatus(text, error) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.classList.toggle("error", !!error);
}

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(url + ": HTTP " + r.status);
  return r.json();
}

async function pollState() {
  try {
    const st = await getJSON("api/state");
    renderSelf(st.self);
    renderLocks(st.locks);
    renderMembers(st.members);
    renderSessions(st.sessions);
    updates++;
    document.body.dataset.updates = updates;
    setStatus("updated " + new Date().toLocaleTimeString(), false);
  } catch (e) {
    setStatus("cannot reach the server: " + e.message, true);
  }
}

async function pollZnode() {
  try {
    renderZnode(await getJSON("api/znode?path=" + encodeURIComponent(browsePath)));
  } catch (e) {
    setStatus("cannot reach the server: " + e.message, true);
  }
}

async function loop() {
  await Promise.all([pollState(), pollZnode()]);
  setTimeout(loop, POLL_MS);
}
loop();
