//! Tool calls that run as tasks: the layer learns which tool started each
//! task (`tools/call` answered with a task) and offloads the result that a
//! `tasks/get` returns once the task has completed, keeping it so that
//! repeated polls return the same file instead of writing a new one.
//!
//! Everything is kept per caller: a task is known by its principal and its
//! id, so a caller who polls another's task id never gets the other's
//! entry (its tool, its file). Whether the caller may see that task at all
//! is the inner server's decision, taken before the layer looks here.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
};

use lro_core::principal::Principal;
use rmcp::model::{CallToolResult, GetTaskResult, JsonObject, TaskPayload};

use super::{intercept::Call, shared::Shared};

/// Tasks remembered at most, oldest forgotten first.
const TASK_CACHE: usize = 1024;

/// A task as one caller knows it.
type Key = (Principal, String);

/// What the layer knows about tasks, bounded: every insert goes through
/// [`TaskBook::track`], which forgets the oldest task once `TASK_CACHE` are
/// known, whichever map the task is in.
#[derive(Default)]
struct TaskBook {
    /// Tool that started each task, learned from `tools/call`.
    tool_of: HashMap<Key, String>,
    /// Processed completed results.
    done: HashMap<Key, JsonObject>,
    /// Every known task, oldest first, each once.
    order: VecDeque<Key>,
}

impl TaskBook {
    fn remember_tool(&mut self, key: Key, tool: &str) {
        self.track(&key);
        self.tool_of.insert(key, tool.to_owned());
    }

    fn remember_done(&mut self, key: Key, result: JsonObject) {
        self.track(&key);
        self.done.insert(key, result);
    }

    /// Records `key` as known and forgets the oldest tasks past the cap.
    fn track(&mut self, key: &Key) {
        if self.tool_of.contains_key(key) || self.done.contains_key(key) {
            return;
        }
        self.order.push_back(key.clone());
        while self.order.len() > TASK_CACHE {
            if let Some(old) = self.order.pop_front() {
                self.tool_of.remove(&old);
                self.done.remove(&old);
            }
        }
    }
}

/// The task book of one `LroService` (shared by its clones).
#[derive(Default)]
pub(super) struct Tasks(Mutex<TaskBook>);

impl Tasks {
    fn book(&self) -> std::sync::MutexGuard<'_, TaskBook> {
        self.0.lock().expect("task book poisoned")
    }

    /// `principal` started `task_id` by calling `tool`.
    pub(super) fn started(&self, principal: &Principal, task_id: &str, tool: &str) {
        self.book()
            .remember_tool((principal.clone(), task_id.to_owned()), tool);
    }

    /// `got`, the inner server's answer to the caller's `tasks/get`, with a
    /// completed result offloaded as a tool result would be: once per
    /// caller and task, the same answer on every later poll.
    pub(super) async fn completed(
        &self,
        shared: &Arc<Shared>,
        mut got: GetTaskResult,
        call: Call<'_>,
    ) -> GetTaskResult {
        let TaskPayload::Completed { result } = &got.task.payload else {
            return got;
        };
        let key = (call.principal.clone(), got.task.task.task_id.clone());
        let (tool, cached) = {
            let book = self.book();
            (
                book.tool_of.get(&key).cloned(),
                book.done.get(&key).cloned(),
            )
        };
        if let Some(done) = cached {
            got.task.payload = TaskPayload::Completed { result: done };
            return got;
        }
        let Ok(call_result) =
            serde_json::from_value::<CallToolResult>(serde_json::Value::Object(result.clone()))
        else {
            return got;
        };
        // A task this caller did not start here has no known tool.
        let tool = tool.unwrap_or_else(|| "task".to_owned());
        if !shared.enabled_for(&tool) {
            return got;
        }
        let processed = shared
            .process(&tool, None, call_result, Default::default(), call)
            .await;
        shared.report(&tool, &processed);
        if let Ok(serde_json::Value::Object(obj)) = serde_json::to_value(&processed.result) {
            self.book().remember_done(key, obj.clone());
            got.task.payload = TaskPayload::Completed { result: obj };
        }
        got
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(principal: &str, id: &str) -> Key {
        (Principal::new(principal), id.to_owned())
    }

    #[test]
    fn the_task_book_stays_bounded_whichever_map_grows() {
        let mut book = TaskBook::default();
        // Completed ids polled from another session were never started here.
        for i in 0..3 * TASK_CACHE {
            book.remember_done(key("a", &format!("done-{i}")), JsonObject::new());
        }
        assert_eq!(book.done.len(), TASK_CACHE);
        assert_eq!(book.order.len(), TASK_CACHE);
        assert!(
            book.done
                .contains_key(&key("a", &format!("done-{}", 3 * TASK_CACHE - 1)))
        );
        for i in 0..2 * TASK_CACHE {
            book.remember_tool(key("a", &format!("t-{i}")), "tool");
            book.remember_done(key("a", &format!("t-{i}")), JsonObject::new());
        }
        assert_eq!(book.order.len(), TASK_CACHE);
        assert!(book.tool_of.len() <= TASK_CACHE && book.done.len() <= TASK_CACHE);
        // A task seen twice is tracked once, and keeps its tool.
        assert_eq!(
            book.tool_of
                .get(&key("a", &format!("t-{}", 2 * TASK_CACHE - 1)))
                .map(String::as_str),
            Some("tool")
        );
    }

    #[test]
    fn one_task_id_is_two_tasks_for_two_principals() {
        let mut book = TaskBook::default();
        book.remember_tool(key("a", "t"), "slow_query");
        book.remember_done(key("a", "t"), JsonObject::new());
        assert!(!book.tool_of.contains_key(&key("b", "t")));
        assert!(!book.done.contains_key(&key("b", "t")));
        book.remember_done(key("b", "t"), JsonObject::new());
        assert_eq!(book.order.len(), 2, "each caller's task is its own entry");
    }
}
