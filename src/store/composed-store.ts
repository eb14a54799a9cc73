/**
 * A Store made of its three concerns: each dialect writes controls, events and recorded
 * steps in their own modules, and its store class hands every call to the right one.
 * The forwarding is written here once, for both dialects.
 */
import type { AgentPatch, ObservabilityEvent } from '../model/index.js';
import type {
  ControlPatch,
  ControlStore,
  EventQuery,
  EventRollup,
  EventStore,
  NewAgent,
  NewControl,
  NewRecordedStep,
  RecordedStepQuery,
  RecordingStore,
  StatsQuery,
  Store,
  StoreChange,
} from './types.js';

export abstract class ComposedStore implements Store {
  abstract readonly kind: Store['kind'];

  protected constructor(
    private readonly controls: ControlStore,
    private readonly events: EventStore,
    private readonly recordings: RecordingStore,
  ) {}

  abstract close(): Promise<void>;

  // ---- controls, agents, links ----
  createControl(control: NewControl) {
    return this.controls.createControl(control);
  }
  getControl(id: number) {
    return this.controls.getControl(id);
  }
  getControlByName(name: string) {
    return this.controls.getControlByName(name);
  }
  listControls(page: { cursor?: number | undefined; limit: number }) {
    return this.controls.listControls(page);
  }
  listAllControls() {
    return this.controls.listAllControls();
  }
  updateControl(id: number, patch: ControlPatch) {
    return this.controls.updateControl(id, patch);
  }
  deleteControl(id: number) {
    return this.controls.deleteControl(id);
  }
  getAgent(name: string) {
    return this.controls.getAgent(name);
  }
  listAgents() {
    return this.controls.listAgents();
  }
  upsertAgent(agent: NewAgent) {
    return this.controls.upsertAgent(agent);
  }
  patchAgent(name: string, patch: AgentPatch) {
    return this.controls.patchAgent(name, patch);
  }
  linkControl(agentName: string, controlId: number) {
    return this.controls.linkControl(agentName, controlId);
  }
  unlinkControl(agentName: string, controlId: number) {
    return this.controls.unlinkControl(agentName, controlId);
  }
  listAgentControls(agentName: string) {
    return this.controls.listAgentControls(agentName);
  }
  agentsOfControl(controlId: number) {
    return this.controls.agentsOfControl(controlId);
  }
  listLinks() {
    return this.controls.listLinks();
  }
  applyChanges(changes: StoreChange[]) {
    return this.controls.applyChanges(changes);
  }
  revision() {
    return this.controls.revision();
  }

  // ---- events, rollups, stats ----
  insertEvents(events: ObservabilityEvent[]) {
    return this.events.insertEvents(events);
  }
  insertRollups(rollups: EventRollup[]) {
    return this.events.insertRollups(rollups);
  }
  queryEvents(query: EventQuery) {
    return this.events.queryEvents(query);
  }
  controlStats(query: StatsQuery) {
    return this.events.controlStats(query);
  }
  pruneEvents(before: string) {
    return this.events.pruneEvents(before);
  }

  // ---- recorded steps ----
  insertRecordedSteps(steps: NewRecordedStep[]) {
    return this.recordings.insertRecordedSteps(steps);
  }
  queryRecordedSteps(query: RecordedStepQuery) {
    return this.recordings.queryRecordedSteps(query);
  }
  pruneRecordedSteps(before: string) {
    return this.recordings.pruneRecordedSteps(before);
  }
}
