// Types of index.js: the answers are the JSON objects of docs/openapi.json,
// with the fields a runtime reads typed and the rest kept.

export type Id = string;
export type Json = Record<string, unknown>;

export interface ProblemFields {
  status: number;
  type: string;
  title: string;
  detail: string;
  requestId?: string;
  retryAfter?: number;
  body: Json;
}

export declare class ProblemError extends Error implements ProblemFields {
  constructor(fields: ProblemFields);
  status: number;
  type: string;
  title: string;
  detail: string;
  requestId?: string;
  retryAfter?: number;
  body: Json;
  /** The problem type after `urn:nomos-continue:problem:`. */
  readonly kind: string;
  readonly retryable: boolean;
}

export declare class TransportError extends Error {}
export declare class SignatureError extends Error {}
export declare class UnknownEventError extends Error {}

export interface ClientOptions {
  token?: string;
  timeoutMs?: number;
  retries?: number;
  maxBackoffMs?: number;
  fetch?: typeof globalThis.fetch;
}

export interface Window {
  opened_at: string;
  expires_at: string;
  open: boolean;
  route: "button" | "chat" | "api";
  continuations: number;
  closed_at: string | null;
}

export interface Execution {
  id: Id;
  status: string;
  result: string;
  terminal: boolean;
  updated_at: string;
  finished_at: string | null;
}

export interface ExecutionRecorded {
  execution: Execution;
  applied: boolean;
  note: string | null;
}

export interface McpTaskRecorded {
  execution_id: Id;
  execution: Execution | null;
  applied: boolean;
  note: string | null;
}

export interface Delivery extends Json {
  id: Id;
  session_id: Id;
  kind: "continuation" | "notice";
  idempotency_key: string;
  execution_ids: Id[];
  note: string;
  state: "pending" | "delivered" | "failed" | "dropped";
  failed_attempts: number;
}

export interface LinkAnswer extends Json {
  linked: Id[];
  already_linked: Id[];
  linked_elsewhere: Json[];
  tasks: Json[];
  policy_revision: string;
}

export interface PushConfiguration {
  url: string;
  token: string;
  authentication: { scheme: string; credentials: string };
}

export interface TaskPush extends PushConfiguration {
  expires_at: string;
}

export interface SessionPush extends PushConfiguration {
  links_until: string;
  max_tasks: number;
}

export interface TaskRegistered extends Json {
  execution_id: Id;
  linked: boolean;
  push: TaskPush | null;
}

export interface Trace {
  traceparent?: string;
}

export declare class Client {
  constructor(baseUrl: string, options?: ClientOptions);
  linkToolResult(sessionId: Id, text: string, trace?: Trace): Promise<LinkAnswer>;
  decideApproval(
    sessionId: Id,
    decision: "approve" | "deny",
    options?: { route?: "button" | "chat" | "api"; minutes?: number },
  ): Promise<{ window: Window | null }>;
  approve(sessionId: Id, options?: { minutes?: number; route?: "button" | "chat" | "api" }): Promise<{ window: Window | null }>;
  deny(sessionId: Id): Promise<{ window: Window | null }>;
  recordTurn(sessionId: Id, role: "system" | "user" | "assistant", content: string): Promise<Json>;
  sessions(query?: Record<string, string | number>): Promise<Json>;
  session(sessionId: Id): Promise<Json>;
  links(sessionId: Id, query?: Record<string, string | number>): Promise<Json>;
  deliveries(sessionId: Id, query?: Record<string, string | number>): Promise<Json>;
  notices(sessionId: Id, query?: Record<string, string | number>): Promise<Json>;
  overview(): Promise<Json>;
  recordExecution(executionId: Id, status: string, result?: string, trace?: Trace): Promise<ExecutionRecorded>;
  execution(executionId: Id): Promise<{ execution: Execution | null; session_id: Id | null }>;
  registerTask(
    sessionId: Id,
    protocol: "a2a" | "mcp",
    taskId: string,
    options?: { agentUrl?: string; agentVersion?: "1.0" | "0.3"; ttlSeconds?: number },
  ): Promise<TaskRegistered>;
  mintSessionPush(sessionId: Id, options?: { ttlSeconds?: number }): Promise<SessionPush>;
  recordMcpTask(answer: Json, options?: { taskId?: string; traceparent?: string }): Promise<McpTaskRecorded>;
  delivery(deliveryId: Id): Promise<Delivery>;
  retry(deliveryId: Id): Promise<{ delivery: Delivery }>;
  policyInfo(): Promise<Json>;
  healthz(): Promise<Json>;
  readyz(): Promise<Json>;
}

export interface ExecutionReport {
  id: Id;
  status: string;
  outcome: "completed" | "failed" | "cancelled" | "unknown";
  result: string;
}

export interface Continuation {
  type: "continuation.v1";
  sessionId: Id;
  idempotencyKey: string;
  executions: ExecutionReport[];
  note: string;
  soul: string;
  timestamp: string;
  traceparent?: string;
}

export interface Notice {
  type: "notice.v1";
  sessionId: Id;
  idempotencyKey: string;
  notice: string;
  timestamp: string;
  traceparent?: string;
}

export type WebhookEvent = Continuation | Notice;

export declare const TOLERANCE_SECONDS: number;

export declare class Receiver {
  constructor(secrets: string[], options?: { toleranceSeconds?: number });
  verify(
    body: Uint8Array | ArrayBuffer | string,
    headers: Headers | Record<string, string>,
    options?: { now?: number },
  ): Promise<WebhookEvent>;
  handler(onEvent: (event: WebhookEvent) => void | Promise<void>): (request: Request) => Promise<Response>;
}

export declare function parseEvent(text: string, traceparent?: string): WebhookEvent;

export interface A2aPushNotificationConfig {
  url: string;
  token: string;
  authentication: { schemes: string[]; credentials: string };
}

export declare function pushNotificationConfig(push: PushConfiguration): A2aPushNotificationConfig;
export declare function pushNotificationConfig(
  push: PushConfiguration,
  taskId: string,
): { taskId: string; pushNotificationConfig: A2aPushNotificationConfig };
