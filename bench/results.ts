/**
 * bench/results.json: the rows of the last run of every benchmark, with when and on what
 * machine it ran. A run of some benchmarks (`--only`) replaces theirs and keeps the rest,
 * so docs/benchmarks.md can be regenerated one section at a time.
 */
import { cpus, loadavg, release, totalmem, type } from 'node:os';
import type { BenchRow, BenchSection, Chapter } from './harness.js';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  os: string;
  /** One-minute load average before and after the benchmark: how busy the machine was. */
  loadBefore: number;
  loadAfter: number;
}

export interface BenchResult {
  name: string;
  /** ISO time the benchmark started. */
  ranAt: string;
  seconds: number;
  machine: Machine;
  rows: BenchRow[];
}

export interface SectionResult {
  name: string;
  chapter: Chapter;
  method: string;
  benchmarks: BenchResult[];
}

export interface Results {
  sections: SectionResult[];
}

export function emptyResults(): Results {
  return { sections: [] };
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** The machine as it is now; `loadBefore` is the load average read when the run began. */
export function describeMachine(loadBefore: number): Machine {
  const cores = cpus();
  return {
    cpu: cores[0]?.model.trim() ?? 'unknown CPU',
    cores: cores.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    os: `${type()} ${release()}`,
    loadBefore: round2(loadBefore),
    loadAfter: round2(loadavg()[0] ?? 0),
  };
}

export function currentLoad(): number {
  return loadavg()[0] ?? 0;
}

/**
 * Puts one benchmark's result into its section, taking the section's chapter and method
 * from the module as it is now. Benchmarks keep the order the module declares; results of
 * benchmarks the module no longer declares are dropped.
 */
export function mergeResult(results: Results, section: Pick<BenchSection, 'name' | 'chapter' | 'method' | 'benchmarks'>, result: BenchResult): Results {
  const declared = section.benchmarks.map((b) => b.name);
  const old = results.sections.find((s) => s.name === section.name);
  const byName = new Map((old?.benchmarks ?? []).map((b) => [b.name, b] as const));
  byName.set(result.name, result);
  const merged: SectionResult = {
    name: section.name,
    chapter: section.chapter,
    method: section.method,
    benchmarks: declared.flatMap((name) => byName.get(name) ?? []),
  };
  const sections = old ? results.sections.map((s) => (s === old ? merged : s)) : [...results.sections, merged];
  return { sections };
}

/** Reads results.json text; a missing file is no results yet. */
export function parseResults(text: string | undefined): Results {
  if (text === undefined) return emptyResults();
  const parsed = JSON.parse(text) as Results;
  if (!Array.isArray(parsed.sections)) throw new Error('bench/results.json: expected { "sections": [...] }');
  return parsed;
}
