/**
 * Every process a command started, read from /proc (Linux): its descendants, and the processes whose command line
 * names its data directory (embedded PostgreSQL and the Temporal servers run in sessions of their own, and are
 * re-parented to init once their starter exits). A tracker samples them while the command runs, so that a process
 * re-parented after a signal is still known when the test asks whether everything is gone.
 */
import { readdirSync, readFileSync } from 'node:fs';

interface ProcessEntry {
  pid: number;
  ppid: number;
  state: string;
  command: string;
}

function processes(): ProcessEntry[] {
  const entries: ProcessEntry[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const command = readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      entries.push({ pid: Number(name), state: fields[0]!, ppid: Number(fields[1]), command });
    } catch {
      // Gone meanwhile.
    }
  }
  return entries;
}

/** Alive: present and not a zombie (a zombie has exited; its parent has not reaped it yet). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

export interface ProcessTracker {
  /** Every process seen so far: pid → command line. */
  readonly seen: Map<number, string>;
  /** Samples once more now. */
  sample(): void;
  /** Those seen that are still alive, with their command lines. */
  survivors(): string[];
  /** Resolves with the survivors once none is left or `timeout_ms` passed. */
  waitGone(timeout_ms: number): Promise<string[]>;
  /** Stops sampling and SIGKILLs whatever is still alive (a failed test leaves nothing behind). */
  dispose(): void;
}

/** Tracks `rootPid`'s descendants and the processes whose command line contains `marker`, every 100 ms. */
export function trackProcesses(rootPid: number, marker: string): ProcessTracker {
  const seen = new Map<number, string>([[rootPid, 'root']]);
  const sample = () => {
    const all = processes();
    const children = new Map<number, ProcessEntry[]>();
    for (const entry of all) children.set(entry.ppid, [...(children.get(entry.ppid) ?? []), entry]);
    const queue = [...seen.keys()].filter(alive);
    for (const entry of all) if (entry.command.includes(marker) && entry.state !== 'Z') queue.push(entry.pid);
    while (queue.length) {
      const pid = queue.pop()!;
      const entry = all.find((candidate) => candidate.pid === pid);
      if (entry && !seen.has(pid)) seen.set(pid, entry.command);
      else if (entry && seen.get(pid) === 'root') seen.set(pid, entry.command);
      for (const child of children.get(pid) ?? []) if (!seen.has(child.pid)) queue.push(child.pid);
    }
  };
  sample();
  const timer = setInterval(sample, 100);
  const survivors = () => [...seen].filter(([pid]) => alive(pid)).map(([pid, command]) => `${pid} ${command.slice(0, 160)}`);
  return {
    seen,
    sample,
    survivors,
    async waitGone(timeout_ms) {
      const deadline = Date.now() + timeout_ms;
      while (Date.now() < deadline) {
        sample();
        if (survivors().length === 0) return [];
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return survivors();
    },
    dispose() {
      clearInterval(timer);
      for (const [pid] of seen) {
        if (!alive(pid)) continue;
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      }
    },
  };
}
