#!/usr/bin/env node
// ptrm's driver for the pzpr.js reference engine (the build PPBench vendors).
//
//   node check.js /abs/path/to/pzpr.js   < requests.jsonl   > answers.jsonl
//
// (or set PZPRJS instead of passing the path). Our code, not part of pzpr.js: it only uses
// pzpr.js's public objects (Puzzle, open, board.cell, mouse/key input, check, getFileData).
// One JSON request per stdin line, one JSON answer per stdout line, in order. A request names
// the board by one of
//   {"url": "https://puzz.link/p?..."}     a puzz.link / pzv.jp URL; the board starts empty
//   {"file": "pzprv3\n..."}                 pzprv3 text, its answer included
// and may add
//   "cells": [[qans, qsub, anum], ...]      every cell's answer, row-major; null = empty
//   "moves": ["mouse,left,3,1", ...]        PPBench moves to replay (after the cells)
//   "want":  ["file", "url", "cells"]       also return getFileData(), getURL(), the cells
//   "id":    anything                       echoed back
// The answer is {"complete": bool, "code": the first fail code or null, "refused": [indices of
// cells whose value pzpr.js would not take], ...}, or {"error": "..."}. Boards opened from a URL
// are kept and reused for later "cells" requests on the same URL, which is what makes ~40
// checks per puzzle cheap.
"use strict";

const path = require("path");
const readline = require("readline");

const pzprPath = process.argv[2] || process.env.PZPRJS;
if (!pzprPath) {
  process.stderr.write("usage: node check.js /abs/path/to/pzpr.js\n");
  process.exit(2);
}
const pzpr = require(path.resolve(pzprPath));

const boards = new Map(); // url -> opened puzzle, reused by later "cells" requests

function openUrl(url, fresh) {
  let puzzle = fresh ? null : boards.get(url);
  if (!puzzle) {
    puzzle = new pzpr.Puzzle();
    puzzle.open(url); // synchronous under node: the variety file is require()d
    puzzle.setMode("play");
    puzzle.opemgr.disableRecord(); // no undo history
    if (!fresh) boards.set(url, puzzle);
  }
  return puzzle;
}

function openFile(text) {
  const puzzle = new pzpr.Puzzle();
  puzzle.open(text);
  puzzle.setMode("play");
  return puzzle;
}

// Bring a board's answer fields to the requested state. A missing or null entry means the
// field's empty value (qans 0, qsub 0, anum -1), so a cached board never carries anything over
// from an earlier request. A value the UI would refuse (pzpr.js's prehook says so: an answer
// on a clue cell, a digit on a given) is not written; its cell index goes into "refused".
// Few changes go through setdata(), which updates pzpr.js's derived data (lit cells, shaded and
// unshaded areas) incrementally, as a click does; many changes are written straight into the
// fields, followed by one rebuildInfo(), as pzpr.js's file reader does.
const FIELDS = ["qans", "qsub", "anum"];
const EMPTY = [0, 0, -1];
const BULK = 40;

function setCells(puzzle, cells) {
  const list = puzzle.board.cell;
  if (cells.length !== 0 && cells.length !== list.length) {
    throw new Error(`got ${cells.length} cells, the board has ${list.length}`);
  }
  const refused = [];
  const changes = [];
  for (let i = 0; i < list.length; i++) {
    const cell = list[i];
    const want = cells[i] || [];
    for (let k = 0; k < FIELDS.length; k++) {
      const name = FIELDS[k];
      const value = want[k] === undefined || want[k] === null ? EMPTY[k] : want[k];
      if (cell[name] === value) continue;
      const hook = cell.prehook && cell.prehook[name];
      if (hook && hook.call(cell, value)) {
        if (refused[refused.length - 1] !== i) refused.push(i);
        continue;
      }
      changes.push([cell, name, value]);
    }
  }
  if (changes.length > BULK) {
    for (const [cell, name, value] of changes) cell[name] = value;
    puzzle.board.rebuildInfo();
  } else {
    for (const [cell, name, value] of changes) cell.setdata(name, value);
  }
  return refused;
}

// A PPBench move: "mouse,<button>,x1,y1[,x2,y2...]" is a press-drag-release through board
// coordinates; "key,<k>[,<k>...]" types keys at the cursor; ";" chains actions.
function replay(puzzle, move) {
  for (const action of move.split(";")) {
    const f = action.split(",");
    if (f[0] === "mouse") {
      const button = f[1].includes("right") ? "right" : "left";
      const alt = f[1].split("+").includes("alt");
      const times = /x(\d+)$/.test(f[1]) ? +RegExp.$1 : 1;
      const points = f.slice(2).map(Number);
      if (alt) puzzle.key.isALT = true;
      for (let t = 0; t < times; t++) puzzle.mouse.inputPath(button, ...points);
      if (alt) puzzle.key.isALT = false;
    } else if (f[0] === "key") {
      puzzle.key.inputKeys(...f.slice(1));
    } else {
      throw new Error(`unsupported move ${JSON.stringify(move)}`);
    }
  }
}

function answer(req) {
  let puzzle;
  const out = {};
  const moves = Array.isArray(req.moves) ? req.moves : null;
  if (typeof req.url === "string") {
    puzzle = openUrl(req.url, moves !== null); // moves start from a fresh board
    out.refused = setCells(puzzle, Array.isArray(req.cells) ? req.cells : []);
  } else if (typeof req.file === "string") {
    puzzle = openFile(req.file);
    if (Array.isArray(req.cells)) out.refused = setCells(puzzle, req.cells);
  } else {
    throw new Error("a request needs a 'url' or a 'file'");
  }
  if (moves) for (const m of moves) replay(puzzle, m);
  puzzle.checker.resetCache(); // derived check data some types memoise (loops, pieces)
  const result = puzzle.check(true);
  out.complete = !!result.complete;
  out.code = result.complete ? null : result.lastcode;
  const want = req.want || [];
  if (want.includes("file")) out.file = puzzle.getFileData();
  if (want.includes("url")) out.url = puzzle.getURL();
  if (want.includes("cells")) {
    const list = puzzle.board.cell; // a pzpr.js CellList: index it, its map() is not Array's
    out.cells = [];
    for (let i = 0; i < list.length; i++) out.cells.push([list[i].qans, list[i].qsub, list[i].anum]);
  }
  return out;
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  if (!line.trim()) return;
  let req = null;
  let out;
  try {
    req = JSON.parse(line);
    out = answer(req);
  } catch (e) {
    out = { error: String(e && e.stack ? e.stack.split("\n").slice(0, 3).join(" | ") : e) };
  }
  if (req && req.id !== undefined) out.id = req.id;
  process.stdout.write(JSON.stringify(out) + "\n");
});
