import { AgentError } from '../errors.js';
import type { PendingCall, StateStore } from '../store.js';
import type { ApprovalDecision, ResumeOptions } from './agent-runtime.js';
import type { ApprovalSigner, ApprovalToSign } from './approval-signature.js';
import type { Delivery } from './run-start.js';

/**
 * Checks a resume's answers against the calls the suspended run waits on and turns them into
 * deliveries: client results, approvals and rejections (signed when the executor signs approvals), and
 * the outcomes of awaited children once every one of them has ended (or, for a sub-agent call, once
 * `reattachable` says its child runs again here). An invalid answer throws before anything is written.
 */
export async function resumeAnswers(
  store: StateStore,
  sessionId: string,
  runId: string,
  pending: readonly PendingCall[],
  options: ResumeOptions,
  signer: ApprovalSigner | undefined,
  reattachable: (call: PendingCall) => boolean = () => false,
): Promise<Delivery[]> {
  const byId = new Map(pending.map((p) => [p.toolCallId, p] as const));
  const seen = new Set<string>();
  const deliveries: Delivery[] = [];
  const take = (toolCallId: string, kind: PendingCall['kind']): PendingCall => {
    const call = byId.get(toolCallId);
    if (!call || seen.has(toolCallId) || call.kind !== kind) {
      throw new AgentError('tool_call_not_pending', `Call ${toolCallId} is not waiting for ${kind === 'client' ? 'a client result' : 'a decision'} in session ${sessionId}${seen.has(toolCallId) ? ' (it was answered twice)' : ''}.`, {
        details: { sessionId, toolCallId, pending: pending.map((p) => ({ toolCallId: p.toolCallId, kind: p.kind })) },
      });
    }
    seen.add(toolCallId);
    return call;
  };
  const answers = options.mode === 'continue' || options.mode === 'with_confirmation' ? options : { toolResults: [], decisions: [] };
  for (const r of answers.toolResults ?? []) deliveries.push({ pending: take(r.toolCallId, 'client'), answer: { kind: 'client', result: r.result, ...(r.isError === undefined ? {} : { isError: r.isError }) } });
  for (const d of answers.decisions ?? []) {
    const call = take(d.toolCallId, 'approval');
    if (signer && !signer.verify(signedFields(sessionId, runId, call, d), d.signature)) {
      throw new AgentError('approval_invalid_signature', `The ${d.decision === 'approve' ? 'approval' : 'rejection'} of call ${d.toolCallId} is not signed for this session, run, call, decision and input.`, { details: { sessionId, runId, toolCallId: d.toolCallId } });
    }
    deliveries.push({
      pending: call,
      answer: d.decision === 'approve' ? { kind: 'approve', ...(d.input === undefined ? {} : { input: d.input }), ...(d.reason === undefined ? {} : { reason: d.reason }) } : { kind: 'reject', ...(d.reason === undefined ? {} : { reason: d.reason }) },
    });
  }
  for (const call of pending) if (call.kind === 'children' && !seen.has(call.toolCallId)) deliveries.push(...(await childrenDelivery(store, call, reattachable)));
  return deliveries;
}

/** A `children` call's delivery: its children's outcomes once all have ended, or a re-attach to a sub-agent child running again here. */
async function childrenDelivery(store: StateStore, call: PendingCall, reattachable: (call: PendingCall) => boolean): Promise<Delivery[]> {
  const outcomes = await childOutcomes(store, call.children ?? []);
  if (outcomes) return [{ pending: call, answer: { kind: 'children', outcomes } }];
  // A sub-agent call whose child runs again in this process (an answer resumed it): the resumed run re-attaches to it.
  return reattachable(call) ? [{ pending: call, answer: { kind: 'children', outcomes: [] } }] : [];
}

/** What a decision's signature must bind: session, run, call, decision and (approve) the final input. */
function signedFields(sessionId: string, runId: string, call: PendingCall, d: ApprovalDecision): ApprovalToSign {
  if (d.decision === 'reject') return { sessionId, runId, toolCallId: d.toolCallId, decision: 'reject' };
  return { sessionId, runId, toolCallId: d.toolCallId, decision: 'approve', input: d.input === undefined ? call.input : d.input };
}

/** The outcomes of awaited child sessions, or undefined while any of them is still running or suspended. */
async function childOutcomes(store: StateStore, children: readonly { readonly sessionId: string }[]) {
  if (children.length === 0) return undefined;
  const outcomes = [];
  for (const child of children) {
    const session = await store.loadSession(child.sessionId);
    const run = session?.currentRunId === undefined ? undefined : await store.getRun(session.currentRunId);
    if (!run || run.status === 'running' || run.status === 'suspended') return undefined;
    outcomes.push({ sessionId: child.sessionId, status: run.status, ...(run.output === undefined ? {} : { output: run.output }), ...(run.error === undefined ? {} : { error: run.error }) });
  }
  return outcomes;
}
