/**
 * Worker thread entry of the event writer (event-writer.ts): owns a second SQLite
 * connection and applies inserts and prunes in the order they arrive.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteStore } from '../store/sqlite/index.js';
import type { WriterRequest, WriterResponse } from './event-writer.js';

const port = parentPort;
if (!port) throw new Error('event-writer-worker must run in a worker thread');
const store = new SqliteStore((workerData as { sqlitePath: string }).sqlitePath);

// Requests are handled one at a time, so inserts land in the order they were sent.
let queue: Promise<void> = Promise.resolve();
port.on('message', (request: WriterRequest) => {
  queue = queue.then(async () => {
    let response: WriterResponse;
    try {
      switch (request.op) {
        case 'insert': {
          const events = request.events;
          await store.insertEvents(events);
          response = { id: request.id, ok: true, count: events.length };
          break;
        }
        case 'rollups':
          await store.insertRollups(request.rollups);
          response = { id: request.id, ok: true, count: request.rollups.length };
          break;
        case 'prune':
          response = { id: request.id, ok: true, count: await store.pruneEvents(request.before) };
          break;
        case 'close':
          await store.close();
          response = { id: request.id, ok: true, count: 0 };
          break;
      }
    } catch (error) {
      response = { id: request.id, ok: false, error: error instanceof Error ? error.message : String(error) };
    }
    port.postMessage(response);
  });
});
