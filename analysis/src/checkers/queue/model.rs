//! A queue history read into messages: each body's sends, its deliveries (which receive,
//! at which position) and its deletes, with their windows.
//!
//! Invariants: a message is known by its body (the workload makes bodies unique); a
//! delivery belongs to an `ok` receive; times are nanoseconds, windows history indices; a
//! value of the wrong shape is an error naming the op, never a panic.

use crate::checkers::calls::{Call, Outcome};
use crate::ops;
use rustc_hash::FxHashMap;
use serde_json::Value;

/// A call's window.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub invoke: u64,
    /// Completion index (`u64::MAX` when it never completed).
    pub complete: u64,
    pub invoke_time: u64,
    /// `u64::MAX` when it never completed.
    pub complete_time: u64,
    pub outcome: Outcome,
    pub process: u64,
}

impl Window {
    fn of(call: &Call) -> Window {
        Window {
            invoke: call.invoke.index,
            complete: call.complete.map_or(u64::MAX, |c| c.index),
            invoke_time: call.invoke.time,
            complete_time: call.complete.map_or(u64::MAX, |c| c.time),
            outcome: call.outcome,
            process: call.invoke.process.client().unwrap_or(0),
        }
    }

    /// The history index a witness names: the completion, or the invoke when none.
    pub fn index(&self) -> u64 {
        if self.complete == u64::MAX {
            self.invoke
        } else {
            self.complete
        }
    }
}

/// One `ok` receive.
#[derive(Debug, Clone)]
pub struct Receive {
    pub window: Window,
    /// The visibility timeout it asked for, in nanoseconds (`None`: not recorded).
    pub visibility_ns: Option<u64>,
    /// `(message id, group)` in the order returned.
    pub messages: Vec<(usize, String)>,
}

#[derive(Debug, Clone, Default)]
pub struct Message {
    pub body: String,
    pub group: String,
    pub sends: Vec<Window>,
    /// `(receive id, position)` in receive order.
    pub deliveries: Vec<(usize, usize)>,
    pub deletes: Vec<Window>,
}

impl Message {
    pub fn acknowledged(&self) -> bool {
        self.sends.iter().any(|s| s.outcome == Outcome::Ok)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Queue {
    pub messages: Vec<Message>,
    pub receives: Vec<Receive>,
    /// Every `ok` receive that returned nothing: `(invoke index, invoke time)`.
    pub empty_receives: Vec<(u64, u64)>,
    by_body: FxHashMap<String, usize>,
}

impl Queue {
    fn message(&mut self, body: &str, group: &str) -> usize {
        if let Some(&id) = self.by_body.get(body) {
            return id;
        }
        self.by_body.insert(body.to_string(), self.messages.len());
        self.messages.push(Message {
            body: body.to_string(),
            group: group.to_string(),
            ..Message::default()
        });
        self.messages.len() - 1
    }
}

/// The queue model of `calls` (queue calls only).
pub fn read_queue(calls: &[Call]) -> Result<Queue, String> {
    let mut q = Queue::default();
    for call in calls {
        add_call(&mut q, call).map_err(|e| format!("op {}: {e}", call.last_index()))?;
    }
    Ok(q)
}

fn body_of(call: &Call) -> Result<(String, String), String> {
    let body = call.invoke.value.as_str().ok_or_else(|| {
        format!(
            "`{}`'s value must be the message body (a string)",
            call.invoke.f
        )
    })?;
    Ok((
        body.to_string(),
        call.invoke.key.as_deref().unwrap_or_default().to_string(),
    ))
}

fn add_call(q: &mut Queue, call: &Call) -> Result<(), String> {
    let window = Window::of(call);
    match call.invoke.f.as_str() {
        ops::SEND => {
            let (body, group) = body_of(call)?;
            let id = q.message(&body, &group);
            q.messages[id].sends.push(window);
        }
        ops::DELETE_MESSAGE => {
            let (body, group) = body_of(call)?;
            let id = q.message(&body, &group);
            q.messages[id].deletes.push(window);
        }
        ops::RECEIVE => add_receive(q, call, window)?,
        other => return Err(format!("`{other}` is not a queue function")),
    }
    Ok(())
}

fn add_receive(q: &mut Queue, call: &Call, window: Window) -> Result<(), String> {
    let (Outcome::Ok, Some(done)) = (call.outcome, call.complete) else {
        return Ok(());
    };
    let list = done
        .value
        .as_array()
        .ok_or("receive's ok value must be an array of {\"group\", \"body\"}")?;
    if list.is_empty() {
        q.empty_receives.push((window.invoke, window.invoke_time));
        return Ok(());
    }
    let visibility_ns = match &call.invoke.value["visibility_timeout_s"] {
        Value::Null => None,
        v => Some(
            v.as_f64()
                .filter(|s| *s >= 0.0)
                .map(|s| (s * 1e9) as u64)
                .ok_or(format!(
                    "visibility_timeout_s {v} is not a number of seconds"
                ))?,
        ),
    };
    let id = q.receives.len();
    let mut messages = Vec::with_capacity(list.len());
    for (pos, m) in list.iter().enumerate() {
        let (Some(body), Some(group)) = (m["body"].as_str(), m["group"].as_str()) else {
            return Err(format!(
                "a received message must be {{\"group\", \"body\"}}, got {m}"
            ));
        };
        let mid = q.message(body, group);
        q.messages[mid].deliveries.push((id, pos));
        messages.push((mid, group.to_string()));
    }
    q.receives.push(Receive {
        window,
        visibility_ns,
        messages,
    });
    Ok(())
}
