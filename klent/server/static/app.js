// klent web page: play Go and chess against the engine through the HTTP API.
//
// The page keeps only the move list.  The server owns the rules: after each move the page asks
// POST v1/{game}/position for the board, the legal moves and the result, and
// POST v1/{game}/move (include_position) for the engine's reply and the board after it.
"use strict";

const GO_LETTERS = "ABCDEFGHJKLMNOPQRST";
const CHESS_GLYPHS = { k: "\u265A", q: "\u265B", r: "\u265C", b: "\u265D", n: "\u265E", p: "\u265F\uFE0E" };

const state = {
  game: null,        // game id, e.g. "go9"
  moves: [],         // move texts from the start position
  position: null,    // PositionOut of the current position
  busy: false,
  selected: null,    // chess: the square a piece was picked up from
  lastReply: null,   // the engine's last MoveResponse
};

const $ = (id) => document.getElementById(id);

function apiKey() { return localStorage.getItem("klent-api-key"); }

async function api(path, body) {
  for (let attempt = 0; attempt < 2; attempt++) {
    const headers = { "Content-Type": "application/json" };
    if (apiKey()) headers["Authorization"] = "Bearer " + apiKey();
    const response = await fetch("v1/" + path, {
      method: body === undefined ? "GET" : "POST",
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 401 && attempt === 0) {
      const key = window.prompt("This server needs an API key:");
      if (!key) break;
      localStorage.setItem("klent-api-key", key);
      continue;
    }
    const data = await response.json().catch(() => ({ detail: response.statusText }));
    if (!response.ok) throw new Error(data.detail || ("HTTP " + response.status));
    return data;
  }
  throw new Error("an API key is needed");
}

function setStatus(text, isError = false) {
  const status = $("status");
  status.textContent = text;
  status.classList.toggle("error", isError);
}

function isGo() { return state.game.startsWith("go"); }
function humanSide() { return Number($("side").value); }
function sideToMove() { return state.moves.length % 2; }
function colourName(index) { return isGo() ? ["Black", "White"][index] : ["White", "Black"][index]; }

// --- game flow --------------------------------------------------------------------------------

async function newGame() {
  state.game = $("game").value;
  state.moves = [];
  state.selected = null;
  state.lastReply = null;
  $("pass").hidden = !isGo();
  showAnalysis(null);
  await refreshPosition();
  if (humanSide() !== 0) await engineMove();
}

async function refreshPosition() {
  state.position = await api(state.game + "/position", { moves: state.moves });
  render();
}

async function humanMove(text) {
  if (state.busy || !state.position || state.position.terminal) return;
  if (sideToMove() !== humanSide()) return;
  if (!state.position.legal_moves.includes(text)) {
    setStatus("Illegal move: " + text, true);
    return;
  }
  state.busy = true;
  try {
    state.moves.push(text);
    await refreshPosition();
    if (!state.position.terminal) await engineMove();
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    state.busy = false;
  }
}

async function engineMove() {
  state.busy = true;
  const mode = $("mode").value;
  setStatus("Engine is thinking…");
  try {
    const request = { moves: state.moves, mode, include_position: true, top_moves: 8 };
    if (mode === "search") request.simulations = Number($("simulations").value) || 200;
    const reply = await api(state.game + "/move", request);
    state.moves.push(reply.move);
    state.lastReply = reply;
    state.position = reply.position;
    showAnalysis(reply);
    render();
  } finally {
    state.busy = false;
  }
}

async function takeBack() {
  if (state.busy) return;
  // Back to the last position where it was the human's turn.
  do { state.moves.pop(); } while (state.moves.length && sideToMove() !== humanSide());
  state.selected = null;
  try {
    await refreshPosition();
    if (sideToMove() !== humanSide()) await engineMove();
  } catch (error) {
    setStatus(error.message, true);
  }
}

// --- rendering --------------------------------------------------------------------------------

function render() {
  const position = state.position;
  if (isGo()) renderGo(position); else renderChess(position);
  $("territory-label").hidden = !isGo();
  if (isGo() && $("territory").checked) showTerritory();
  renderMoveList();
  if (position.terminal) {
    setStatus("Game over: " + position.result);
  } else if (sideToMove() === humanSide()) {
    const last = state.lastReply && state.moves.length ? "Engine played " + state.moves[state.moves.length - 1] + ". " : "";
    setStatus(last + "Your move (" + colourName(humanSide()) + ").");
  }
}

function renderMoveList() {
  const list = $("moves");
  list.innerHTML = "";
  for (const move of state.moves) {
    const item = document.createElement("li");
    item.textContent = move;
    list.appendChild(item);
  }
}

function showAnalysis(reply) {
  const body = $("top-moves").querySelector("tbody");
  body.innerHTML = "";
  if (!reply) {
    $("eval-text").textContent = "No move yet.";
    $("eval-fill").style.width = "50%";
    $("pv").textContent = "";
    return;
  }
  // The reply's value is for the engine (the side that was to move); show it for White.
  const engineColour = colourName((state.moves.length - 1) % 2);
  const whiteRate = engineColour === "White" ? reply.winrate : 1 - reply.winrate;
  $("eval-fill").style.width = (100 * whiteRate).toFixed(1) + "%";
  $("eval-text").textContent =
    `${engineColour} (engine): value ${reply.value >= 0 ? "+" : ""}${reply.value.toFixed(3)}, ` +
    `win rate ${(100 * reply.winrate).toFixed(1)}% · ${reply.mode}` +
    (reply.simulations ? `, ${reply.simulations} simulations` : "") +
    ` · ${(1000 * reply.elapsed).toFixed(0)} ms`;
  for (const stat of reply.top_moves) {
    const row = document.createElement("tr");
    if (stat.move === reply.move) row.className = "chosen";
    for (const cell of [stat.move, pct(stat.prior), signed(stat.q), stat.visits, pct(stat.policy)]) {
      const td = document.createElement("td");
      td.textContent = cell;
      row.appendChild(td);
    }
    body.appendChild(row);
  }
  $("pv").textContent = reply.pv.length ? "Principal variation: " + reply.pv.join(" ") : "";
}

function pct(x) { return (100 * x).toFixed(1) + "%"; }
function signed(x) { return (x >= 0 ? "+" : "") + x.toFixed(3); }

// Go: an SVG board; rows come top (highest number) first.
function renderGo(position) {
  const size = position.board.length;
  const cell = 480 / (size + 1);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 480 480");
  svg.setAttribute("class", "go-board");
  svg.setAttribute("width", "480");
  svg.setAttribute("height", "480");
  const add = (tag, attrs, text) => {
    const el = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    if (text !== undefined) el.textContent = text;
    svg.appendChild(el);
    return el;
  };
  const at = (i) => cell * (i + 1);
  for (let i = 0; i < size; i++) {
    add("line", { x1: at(0), y1: at(i), x2: at(size - 1), y2: at(i), class: "go-line" });
    add("line", { x1: at(i), y1: at(0), x2: at(i), y2: at(size - 1), class: "go-line" });
    add("text", { x: at(i), y: cell * 0.4, class: "go-label" }, GO_LETTERS[i]);
    add("text", { x: cell * 0.4, y: at(i), class: "go-label" }, String(size - i));
  }
  for (const [r, c] of starPoints(size)) add("circle", { cx: at(c), cy: at(r), r: 3, class: "go-star" });
  const last = position.last_move;
  for (let r = 0; r < size; r++) {
    for (let c = 0; c < size; c++) {
      const vertex = GO_LETTERS[c] + (size - r);
      const stone = position.board[r][c];
      if (stone !== ".") {
        add("circle", { cx: at(c), cy: at(r), r: cell * 0.47, class: stone === "X" ? "stone-black" : "stone-white" });
        if (vertex === last) add("circle", { cx: at(c), cy: at(r), r: cell * 0.2, class: "last-marker" });
      }
      const point = add("rect", {
        x: at(c) - cell / 2, y: at(r) - cell / 2, width: cell, height: cell,
        class: "go-point", "data-vertex": vertex,
      });
      point.addEventListener("click", () => humanMove(vertex));
    }
  }
  $("board").replaceChildren(svg);
}

// Go: shade each point by the model's predicted final owner (POST v1/{game}/analyze), a square
// whose opacity is the certainty; nothing for a model without an ownership head.
async function showTerritory() {
  const moves = state.moves.slice();
  let reply;
  try {
    reply = await api(state.game + "/analyze", { moves });
  } catch (error) {
    setStatus(error.message, true);
    return;
  }
  const svg = $("board").querySelector("svg");
  if (!reply.ownership || !svg || moves.join(" ") !== state.moves.join(" ")) return;
  const size = reply.ownership.length;
  const cell = 480 / (size + 1);
  const ns = "http://www.w3.org/2000/svg";
  for (let r = 0; r < size; r++) {
    for (let c = 0; c < size; c++) {
      const owner = reply.ownership[r][c];
      if (Math.abs(owner) < 0.1) continue;
      const square = document.createElementNS(ns, "rect");
      const side = cell * 0.42;
      for (const [k, v] of Object.entries({
        x: cell * (c + 1) - side / 2, y: cell * (r + 1) - side / 2, width: side, height: side,
        class: owner > 0 ? "owner-black" : "owner-white", opacity: (0.85 * Math.abs(owner)).toFixed(2),
      })) square.setAttribute(k, v);
      svg.appendChild(square);
    }
  }
  if (reply.score !== null && reply.score !== undefined) {
    const lead = reply.score >= 0 ? "B+" + reply.score.toFixed(1) : "W+" + (-reply.score).toFixed(1);
    $("territory-score").textContent = "Predicted result: " + lead;
  }
}

function starPoints(size) {
  if (size < 7) return [];
  const edge = size >= 13 ? 3 : 2;
  const far = size - 1 - edge;
  const points = [[edge, edge], [edge, far], [far, edge], [far, far]];
  if (size % 2 === 1) points.push([(size - 1) / 2, (size - 1) / 2]);
  return points;
}

// Chess: a grid of squares; click a piece, then its target square.
function renderChess(position) {
  const flip = humanSide() === 1;
  const grid = document.createElement("div");
  grid.className = "chess-board";
  const last = position.last_move;
  const targets = state.selected
    ? position.legal_moves.filter((m) => m.startsWith(state.selected)).map((m) => m.slice(2, 4))
    : [];
  for (let row = 0; row < 8; row++) {
    for (let col = 0; col < 8; col++) {
      const r = flip ? 7 - row : row;
      const c = flip ? 7 - col : col;
      const name = "abcdefgh"[c] + (8 - r);
      const square = document.createElement("div");
      square.className = "square " + ((r + c) % 2 === 0 ? "light" : "dark");
      square.dataset.square = name;
      if (name === state.selected) square.classList.add("selected");
      if (targets.includes(name)) square.classList.add("target");
      if (last && (last.slice(0, 2) === name || last.slice(2, 4) === name)) square.classList.add("last");
      const piece = position.board[r][c];
      if (piece !== ".") {
        const glyph = document.createElement("span");
        glyph.className = piece === piece.toUpperCase() ? "piece-white" : "piece-black";
        glyph.textContent = CHESS_GLYPHS[piece.toLowerCase()];
        square.appendChild(glyph);
      }
      if (row === 7) {
        const label = document.createElement("span");
        label.className = "coord";
        label.textContent = name;
        square.appendChild(label);
      }
      square.addEventListener("click", () => chessClick(name));
      grid.appendChild(square);
    }
  }
  $("board").replaceChildren(grid);
}

function chessClick(square) {
  if (state.busy || state.position.terminal) return;
  const legal = state.position.legal_moves;
  if (state.selected) {
    const candidates = legal.filter((m) => m.startsWith(state.selected + square));
    if (candidates.length) {
      // A promotion is to a queen.
      const wanted = candidates.find((m) => m.length === 4) || candidates.find((m) => m.endsWith("q"));
      state.selected = null;
      humanMove(wanted);
      return;
    }
  }
  state.selected = legal.some((m) => m.startsWith(square)) ? square : null;
  renderChess(state.position);
}

// --- start ------------------------------------------------------------------------------------

async function start() {
  try {
    const { models } = await api("models");
    const select = $("game");
    for (const model of models) {
      const option = document.createElement("option");
      option.value = model.game;
      option.textContent = model.game;
      select.appendChild(option);
    }
    if (!models.length) throw new Error("this server has no models");
    if (models.some((m) => m.game === "go9")) select.value = "go9";
    $("new-game").addEventListener("click", () => newGame().catch((e) => setStatus(e.message, true)));
    $("pass").addEventListener("click", () => humanMove("pass"));
    $("undo").addEventListener("click", takeBack);
    $("territory").addEventListener("change", () => { $("territory-score").textContent = ""; render(); });
    $("mode").addEventListener("change", () => { $("simulations-label").hidden = $("mode").value !== "search"; });
    $("simulations-label").hidden = true;
    await newGame();
  } catch (error) {
    setStatus(error.message, true);
  }
}

start();
