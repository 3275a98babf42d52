//! The word lists and templates a memory is drawn from, and the draw itself:
//! one seeded RNG, consumed in a fixed order, so a seed always gives the
//! same memories.

use rand::Rng;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

use crate::memory::{
    Decay, Entity, Memory, MemoryType, Provenance, Relationship, Status, Temporal,
};

/// The five namespaces, in a fixed order.
pub const NAMESPACES: [&str; 5] = [
    "_semantic/knowledge",
    "_semantic/decisions",
    "_procedural/patterns",
    "_episodic/incidents",
    "_episodic/sessions",
];

/// Product names the content mentions, so filter tasks have answers.
pub const PRODUCTS: [&str; 5] = ["Atlas", "Borealis", "Cobalt", "Dynamo", "Ember"];

/// The fixed tag vocabulary.
pub const TAGS: [&str; 14] = [
    "architecture",
    "performance",
    "security",
    "reliability",
    "caching",
    "database",
    "api",
    "testing",
    "deployment",
    "observability",
    "incident",
    "decision",
    "onboarding",
    "tooling",
];

const TOPICS: [&str; 16] = [
    "caching",
    "authentication",
    "rate limiting",
    "schema migrations",
    "search indexing",
    "telemetry",
    "deployments",
    "retries",
    "backpressure",
    "sharding",
    "session storage",
    "feature flags",
    "billing exports",
    "webhooks",
    "query planning",
    "token refresh",
];

const TECHNIQUES: [&str; 12] = [
    "write-through caching",
    "circuit breakers",
    "exponential backoff",
    "blue-green deployments",
    "idempotency keys",
    "consistent hashing",
    "event sourcing",
    "read replicas",
    "bulkheads",
    "canary releases",
    "connection pooling",
    "optimistic locking",
];

const FAILURES: [&str; 10] = [
    "latency spikes",
    "memory leaks",
    "connection pool exhaustion",
    "stale reads",
    "certificate expiry",
    "disk pressure",
    "thundering herds",
    "deadlocks",
    "DNS failures",
    "duplicate messages",
];

const PEOPLE: [&str; 8] = [
    "Ada Brennan",
    "Ravi Menon",
    "Sofia Lindqvist",
    "Kenji Watanabe",
    "Lucia Ortega",
    "Tomasz Nowak",
    "Amara Okafor",
    "Felix Baumann",
];

const TEAMS: [&str; 6] = [
    "platform",
    "payments",
    "search",
    "identity",
    "infrastructure",
    "data",
];

const METRICS: [&str; 6] = [
    "p99 latency",
    "error rate",
    "cache hit ratio",
    "deploy time",
    "memory usage",
    "queue depth",
];

const TRUST_LEVELS: [&str; 4] = ["verified", "user_stated", "inferred", "unverified"];
const SOURCE_TYPES: [&str; 5] = [
    "conversation",
    "document",
    "code_review",
    "incident_report",
    "observation",
];
const AGENTS: [&str; 4] = ["claude-code", "atlatl-cli", "cursor", "manual-entry"];
const RELATIONSHIP_TYPES: [&str; 5] = [
    "relates_to",
    "supersedes",
    "derived_from",
    "depends_on",
    "contradicts",
];

/// 2024-01-01T00:00:00Z.
const START_UNIX: i64 = 1_704_067_200;
/// 2026-01-01T00:00:00Z: every timestamp lies in 2024–2025.
const END_UNIX: i64 = 1_767_225_600;

fn pick<'a, R: Rng>(rng: &mut R, items: &[&'a str]) -> &'a str {
    items[rng.random_range(0..items.len())]
}

/// `n` distinct items, in draw order (a partial Fisher–Yates shuffle).
fn pick_distinct<'a, R: Rng>(rng: &mut R, items: &[&'a str], n: usize) -> Vec<&'a str> {
    let mut pool: Vec<&str> = items.to_vec();
    let n = n.min(pool.len());
    for i in 0..n {
        let j = rng.random_range(i..pool.len());
        pool.swap(i, j);
    }
    pool.truncate(n);
    pool
}

fn uuid<R: Rng>(rng: &mut R) -> String {
    let mut b: [u8; 16] = rng.random();
    // Version 4 and RFC 4122 variant bits, so the ids look like real UUIDs.
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

fn iso8601(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .expect("corpus timestamps are in range")
        .format(&Rfc3339)
        .expect("RFC 3339 formatting of a UTC time cannot fail")
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The words one memory is built from, drawn once so that title, content
/// and entities agree with each other.
struct Draw<'a> {
    product: &'a str,
    topic: &'a str,
    tech: &'a str,
    tech2: &'a str,
    failure: &'a str,
    failure2: &'a str,
    person: &'a str,
    team: &'a str,
    metric: &'a str,
    n: u32,
    pct: u32,
}

impl Draw<'_> {
    fn fill(&self, template: &str) -> String {
        template
            .replace("{P}", self.product)
            .replace("{topic}", self.topic)
            .replace("{Tech}", &capitalize(self.tech))
            .replace("{tech2}", self.tech2)
            .replace("{tech}", self.tech)
            .replace("{failure2}", self.failure2)
            .replace("{Failure}", &capitalize(self.failure))
            .replace("{failure}", self.failure)
            .replace("{person}", self.person)
            .replace("{team}", self.team)
            .replace("{metric}", self.metric)
            .replace("{n}", &self.n.to_string())
            .replace("{pct}", &self.pct.to_string())
    }
}

/// Title templates per namespace (same order as [`NAMESPACES`]).
const TITLES: [&[&str]; 5] = [
    &[
        "How {P} handles {topic}",
        "{P} {topic} overview",
        "{Tech} in {P}",
    ],
    &[
        "Adopt {tech} for {P} {topic}",
        "Decision: {topic} ownership in {P}",
        "Replace {tech2} with {tech} in {P}",
    ],
    &[
        "{Tech} pattern for {topic}",
        "Runbook: {topic} changes in {P}",
        "Checklist for {P} {topic}",
    ],
    &[
        "{P} incident: {failure} in {topic}",
        "{Failure} during {P} {topic} rollout",
        "Postmortem: {P} {topic} outage",
    ],
    &[
        "Session: {topic} work on {P}",
        "Pairing on {P} {topic} with {person}",
        "Notes: {tech} spike for {P}",
    ],
];

/// Opening sentences per namespace; each mentions the product.
const OPENERS: [&[&str]; 5] = [
    &[
        "{P} relies on {tech} to keep {topic} predictable under load.",
        "In {P}, {topic} is owned by the {team} team and documented in the runbook.",
        "{P} keeps {metric} within budget for {topic} because {tech} absorbs bursts.",
    ],
    &[
        "The {team} team decided to adopt {tech} for {topic} in {P}.",
        "{person} proposed moving {P} {topic} from {tech2} to {tech}; the review accepted it.",
        "We chose to keep {topic} inside {P} rather than split it out, for simpler operations.",
    ],
    &[
        "To change {topic} in {P} safely, enable {tech} first, then watch {metric}.",
        "The standard pattern for {topic} in {P} is {tech} combined with {tech2}.",
        "Verify {topic} changes on a staging copy of {P} before promoting them.",
    ],
    &[
        "{P} suffered {failure} during {topic} work, raising {metric} by {pct} percent.",
        "An alert fired when {P} hit {failure} while the {team} team rolled out {topic} changes.",
        "Customers of {P} saw errors after {failure} in the {topic} path went unnoticed.",
    ],
    &[
        "{person} paired with the {team} team on {topic} for {P}.",
        "We traced {metric} regressions in {P} back to {topic} and prototyped {tech}.",
        "Working session on {P}: reviewed {topic} dashboards and open questions about {tech}.",
    ],
];

/// Follow-up sentences, any namespace.
const FOLLOW_UPS: [&str; 10] = [
    "The root cause turned out to be {failure2}, which {tech} now contains.",
    "{person} recommends pairing {tech} with {tech2} whenever {topic} traffic doubles.",
    "After {n} weeks, {metric} improved by {pct} percent across the fleet.",
    "The {team} team will revisit this once more production data is available.",
    "Known caveat: {tech2} interacts badly with {topic} when retries are unbounded.",
    "Dashboards for {metric} are linked from the runbook so on-call can check them quickly.",
    "A follow-up ticket tracks removing the legacy {topic} code path by next quarter.",
    "Load tests showed {tech} holding steady at {n} thousand requests per second.",
    "{person} wrote the summary and shared it with the {team} channel for review.",
    "Rollback is a single config change, so the risk of trying {tech} is low.",
];

/// A namespace tag that fits, put first when a memory gets it.
const AFFINITY_TAGS: [&str; 5] = [
    "architecture",
    "decision",
    "tooling",
    "incident",
    "onboarding",
];

pub(crate) fn generate_memory<R: Rng>(rng: &mut R, index: usize, earlier: &[Memory]) -> Memory {
    let id = uuid(rng);
    // The first five memories cover every namespace, so even tiny corpora
    // contain all of them; after that the draw is uniform.
    let ns_index = if index < NAMESPACES.len() {
        index
    } else {
        rng.random_range(0..NAMESPACES.len())
    };
    let namespace = NAMESPACES[ns_index];
    let techs = pick_distinct(rng, &TECHNIQUES, 2);
    let failures = pick_distinct(rng, &FAILURES, 2);
    let draw = Draw {
        product: pick(rng, &PRODUCTS),
        topic: pick(rng, &TOPICS),
        tech: techs[0],
        tech2: techs[1],
        failure: failures[0],
        failure2: failures[1],
        person: pick(rng, &PEOPLE),
        team: pick(rng, &TEAMS),
        metric: pick(rng, &METRICS),
        n: rng.random_range(2..=45),
        pct: rng.random_range(5..=60),
    };

    let title = draw.fill(pick(rng, TITLES[ns_index]));
    let mut sentences = vec![draw.fill(pick(rng, OPENERS[ns_index]))];
    // Usually one follow-up, sometimes two: tuned so that a full-detail
    // memory averages ~880 characters (~220 tokens).
    let follow_ups = if rng.random_bool(0.1) { 2 } else { 1 };
    sentences.extend(
        pick_distinct(rng, &FOLLOW_UPS, follow_ups)
            .into_iter()
            .map(|t| draw.fill(t)),
    );
    let content = sentences.join(" ");

    let tag_count = rng.random_range(1..=4);
    let mut tags: Vec<String> = Vec::with_capacity(tag_count);
    if rng.random_bool(0.6) {
        tags.push(AFFINITY_TAGS[ns_index].to_owned());
    }
    for tag in pick_distinct(rng, &TAGS, 4) {
        if tags.len() == tag_count {
            break;
        }
        if !tags.iter().any(|t| t == tag) {
            tags.push(tag.to_owned());
        }
    }

    let created_unix = rng.random_range(START_UNIX..END_UNIX);
    // Most memories are edited within a few weeks; never past the end of 2025.
    let modified_unix = if rng.random_bool(0.3) {
        created_unix
    } else {
        (created_unix + rng.random_range(3_600..60 * 86_400)).min(END_UNIX - 1)
    };
    let created = iso8601(created_unix);
    let modified = iso8601(modified_unix);
    let status = if rng.random_bool(0.2) {
        Status::Archived
    } else {
        Status::Active
    };
    let priority = rng.random_range(1..=5);

    // Entities: the product always, then whatever else the text mentions.
    let mut entities = vec![Entity {
        name: draw.product.to_owned(),
        entity_type: "product".to_owned(),
    }];
    let text = format!("{title} {content}");
    let candidates = [
        (draw.person.to_owned(), "person"),
        (format!("{} team", draw.team), "team"),
        (draw.tech.to_owned(), "technology"),
    ];
    for (name, kind) in candidates {
        if text.contains(&name) && entities.len() < 3 {
            entities.push(Entity {
                name,
                entity_type: kind.to_owned(),
            });
        }
    }

    // Links only point backwards in generation order, so every target exists.
    let rel_count = if earlier.is_empty() {
        0
    } else {
        [0, 0, 1, 1, 1, 2][rng.random_range(0..6)]
    };
    let relationships = (0..rel_count)
        .map(|_| Relationship {
            relationship_type: pick(rng, &RELATIONSHIP_TYPES).to_owned(),
            target: earlier[rng.random_range(0..earlier.len())].id.clone(),
        })
        .collect();

    let provenance = Provenance {
        confidence: f64::from(rng.random_range(30u32..=100)) / 100.0,
        trust_level: pick(rng, &TRUST_LEVELS).to_owned(),
        source_type: pick(rng, &SOURCE_TYPES).to_owned(),
        agent: pick(rng, &AGENTS).to_owned(),
    };
    let memory_type = MemoryType::of_namespace(namespace);
    // Episodes fade fastest, procedures slowest.
    let half_life_days = match memory_type {
        MemoryType::Episodic => [14, 30, 60][rng.random_range(0..3)],
        MemoryType::Semantic => [90, 180, 365][rng.random_range(0..3)],
        MemoryType::Procedural => [180, 365, 730][rng.random_range(0..3)],
    };
    let temporal = Temporal {
        valid_from: created.clone(),
        valid_until: (status == Status::Archived).then(|| modified.clone()),
        decay: Decay { half_life_days },
    };

    Memory {
        id,
        memory_type,
        content,
        created,
        modified,
        namespace: namespace.to_owned(),
        title,
        tags,
        status,
        priority,
        entities,
        relationships,
        provenance,
        temporal,
    }
}
