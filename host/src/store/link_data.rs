//! Per-link data nomos-continue keeps beside the seed's link table, in its
//! own table `nomos_link_data`, one row per execution id.
//!
//! Why a side table: the seed's `nomos_plan_executions` is the runtime's,
//! written while every migration runs, and each column added to it is an
//! ACCESS EXCLUSIVE lock on a live table (`docs/operations.md`,
//! "Migrations"). Each concern here owns a group of nullable columns and
//! writes only those, so the next one (a protocol's task source and id) is
//! one more group and one more upsert, never a change to the link table.
//!
//! It keeps a W3C trace context per execution, and the protocol task
//! (MCP Tasks, A2A) an execution id stands for. The store only keeps
//! text: what a valid `traceparent` is, and which span it names, is decided
//! above it (`telemetry`).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::decode::RowExt;
use super::dialect::{query, trunc};
use super::types::{TaskSource, TraceSource};
use super::{dedup, Result, Store};

/// The trace context kept for one execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkTrace {
    /// The `traceparent` header value.
    pub traceparent: String,
    /// The `tracestate` header value, if one came with it.
    pub tracestate: Option<String>,
    /// Which write set it.
    pub source: TraceSource,
}

impl Store {
    /// Keeps `traceparent` (and `tracestate`) for each of `execution_ids`,
    /// by the rule of its `source`: a tool result's replaces whatever was
    /// kept (it names the call that started the work), a status report's
    /// is kept only where nothing is yet (a runtime may report before it
    /// links, and the report is then the only context there is). Returns
    /// how many executions now hold this context.
    ///
    /// One statement for all ids, so a tool result naming many executions
    /// costs one round trip.
    pub async fn keep_trace(
        &self,
        execution_ids: &[Uuid],
        traceparent: &str,
        tracestate: Option<&str>,
        source: TraceSource,
        now: DateTime<Utc>,
    ) -> Result<u64> {
        let ids = dedup(execution_ids);
        if ids.is_empty() {
            return Ok(0);
        }
        let replace = match source {
            TraceSource::ToolResult => "TRUE",
            TraceSource::StatusReport => "d.traceparent IS NULL",
        };
        // `WHERE TRUE`: SQLite needs a WHERE before an upsert's ON CONFLICT
        // when the rows come from a SELECT.
        let sql = format!(
            "INSERT INTO nomos_link_data AS d \
               (execution_id, traceparent, tracestate, trace_source, updated_at) \
             SELECT z.eid, $2, $3, $4, $5 FROM {zip} WHERE TRUE \
             ON CONFLICT (execution_id) DO UPDATE SET \
               traceparent = EXCLUDED.traceparent, tracestate = EXCLUDED.tracestate, \
               trace_source = EXCLUDED.trace_source, updated_at = EXCLUDED.updated_at \
             WHERE {replace}",
            zip = self.backend().zip("z", &[("$1", "eid", "uuid")]),
        );
        query(sql)
            .bind(&ids)
            .bind(traceparent)
            .bind(tracestate)
            .bind(source.as_str())
            .bind(trunc(now))
            .execute(self)
            .await
    }

    /// The trace context kept for each of `execution_ids` that has one.
    pub async fn link_traces(&self, execution_ids: &[Uuid]) -> Result<HashMap<Uuid, LinkTrace>> {
        Ok(self.link_data(execution_ids).await?.traces)
    }

    /// What is kept for each of `execution_ids`, its trace context and its
    /// task, in one read: a plan pass needs both for the same executions.
    pub async fn link_data(&self, execution_ids: &[Uuid]) -> Result<LinkData> {
        let ids = dedup(execution_ids);
        let mut data = LinkData::default();
        if ids.is_empty() {
            return Ok(data);
        }
        let sql = format!(
            "SELECT d.execution_id, d.traceparent, d.tracestate, d.trace_source, \
               d.task_source, d.task_id \
             FROM {} \
             WHERE d.traceparent IS NOT NULL OR d.task_id IS NOT NULL",
            self.backend()
                .rows_by_ids("nomos_link_data", "execution_id", "$1", "d"),
        );
        for r in query(sql).bind(&ids).fetch_all(self).await? {
            let id = r.uuid("execution_id")?;
            if let Some(traceparent) = r.opt_text("traceparent")? {
                let trace = LinkTrace {
                    traceparent,
                    tracestate: r.opt_text("tracestate")?,
                    source: r.parsed("trace_source")?,
                };
                data.traces.insert(id, trace);
            }
            if let Some(task_id) = r.opt_text("task_id")? {
                let task = LinkTask {
                    source: r.parsed("task_source")?,
                    task_id,
                };
                data.tasks.insert(id, task);
            }
        }
        Ok(data)
    }
}

/// What is kept per execution (see [`Store::link_data`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkData {
    /// The trace context of each execution that has one.
    pub traces: HashMap<Uuid, LinkTrace>,
    /// The protocol task of each execution that stands for one.
    pub tasks: HashMap<Uuid, LinkTask>,
}

/// The protocol task an execution id stands for.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LinkTask {
    /// The protocol the task belongs to.
    pub source: TaskSource,
    /// The task's own id, as the remote side minted it.
    pub task_id: String,
}

impl Store {
    /// Keeps the task each execution id stands for. Written once per
    /// execution: the id is derived from the task
    /// ([`task_execution_id`](super::task_execution_id)), so a second write
    /// for the same execution names the same task and changes nothing.
    pub async fn keep_tasks(&self, tasks: &[(Uuid, LinkTask)], now: DateTime<Utc>) -> Result<u64> {
        if tasks.is_empty() {
            return Ok(0);
        }
        let ids: Vec<Uuid> = tasks.iter().map(|(id, _)| *id).collect();
        let sources: Vec<String> = tasks
            .iter()
            .map(|(_, t)| t.source.as_str().into())
            .collect();
        let task_ids: Vec<String> = tasks.iter().map(|(_, t)| t.task_id.clone()).collect();
        let sql =
            format!(
            "INSERT INTO nomos_link_data AS d (execution_id, task_source, task_id, updated_at) \
             SELECT z.eid, z.src, z.tid, $4 FROM {zip} WHERE TRUE \
             ON CONFLICT (execution_id) DO UPDATE SET \
               task_source = EXCLUDED.task_source, task_id = EXCLUDED.task_id, \
               updated_at = EXCLUDED.updated_at \
             WHERE d.task_id IS NULL",
            zip = self.backend().zip(
                "z",
                &[("$1", "eid", "uuid"), ("$2", "src", "text"), ("$3", "tid", "text")]
            ),
        );
        query(sql)
            .bind(&ids)
            .bind(&sources[..])
            .bind(&task_ids[..])
            .bind(trunc(now))
            .execute(self)
            .await
    }

    /// The task each of `execution_ids` stands for, where one does.
    pub async fn link_tasks(&self, execution_ids: &[Uuid]) -> Result<HashMap<Uuid, LinkTask>> {
        Ok(self.link_data(execution_ids).await?.tasks)
    }
}
