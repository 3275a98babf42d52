//! Running a plan over one offload file: the header read, the recipe
//! resolved, the job started, and the output finished with the request for
//! the next part.

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader, Cursor, Read},
};

use lro_core::{
    descriptor::OffloadHeader,
    metric::label::ExtractMode,
    recipes::{RecipeSet, SAMPLE_SIZE},
};
use serde_json::Value;

use crate::{
    ExtractError, ExtractOutput, ExtractRequest, ResolvedFile, fast,
    jq::{self, Guard, Job, Render, project},
    output::{Collector, Cut, Window},
    plan::Plan,
    slurp::Slurp,
    text,
};

/// How a file is read: [`ExtractConfig::fast_paths`] and
/// [`ExtractConfig::check_size`].
///
/// [`ExtractConfig::fast_paths`]: crate::ExtractConfig::fast_paths
/// [`ExtractConfig::check_size`]: crate::ExtractConfig::check_size
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    fast_paths: bool,
    check_size: bool,
}

impl Reading {
    pub(crate) fn of(cfg: &crate::ExtractConfig) -> Self {
        Self {
            fast_paths: cfg.fast_paths,
            check_size: cfg.check_size,
        }
    }
}

/// The header, and the bytes of its line.
fn read_header(
    reader: &mut impl BufRead,
    file: &ResolvedFile,
) -> Result<(OffloadHeader, u64), ExtractError> {
    let mut line = Vec::new();
    reader
        .read_until(b'\n', &mut line)
        .map_err(|source| ExtractError::Io {
            path: file.path.clone(),
            source,
        })?;
    let text = std::str::from_utf8(&line)
        .map_err(|_| ExtractError::BadHeader("header line is not UTF-8".into()))?;
    let header = lro_core::file::parse_header(&file.path, text)
        .map_err(|e| ExtractError::BadHeader(lro_core::error::chain(&e).to_string()))?;
    Ok((header, line.len() as u64))
}

pub(crate) fn execute(
    req: &ExtractRequest,
    mode: ExtractMode,
    plan: Plan,
    file: ResolvedFile,
    guard: &Guard,
    out: Collector,
    reading: Reading,
) -> Result<ExtractOutput, ExtractError> {
    let fast_paths = reading.fast_paths;
    let opened = file.open()?;
    let on_disk = opened.metadata().ok().map(|m| m.len());
    // A hint for reading the records whole; the file may still change.
    let size = on_disk.unwrap_or(0) as usize;
    let mut reader = BufReader::with_capacity(256 * 1024, opened);
    let (header, header_len) = read_header(&mut reader, &file)?;
    // The size the file system gives, against the header's: no read more.
    if let (true, Some(on_disk)) = (reading.check_size, on_disk) {
        let seen = lro_core::integrity::Seen::sized(header_len, on_disk);
        lro_core::integrity::check(&header, seen).map_err(|damage| ExtractError::Damaged {
            path: req.file_path.clone(),
            what: damage.to_string(),
        })?;
    }
    let mut raw = false;
    // With slurp, offset/limit page the elements of the one result (see
    // `Job::window`); else the stream of results.
    let window = Window {
        offset: req.offset.unwrap_or(0),
        limit: req.limit,
    };
    let paged = matches!(mode, ExtractMode::Recipe | ExtractMode::Query);
    let mut out = if paged { out.window(window) } else { out };
    match plan {
        Plan::Recipe { number, params } => {
            let (sample_bytes, sample) = read_sample(&mut reader, &file)?;
            let set = RecipeSet::derive(&sample, header.detail);
            let recipe = set.get(number).ok_or_else(|| {
                ExtractError::InvalidRequest(format!("recipe must be 1..=10, got {number}"))
            })?;
            let accepted: Vec<&str> = recipe.params.iter().map(|p| p.name.as_str()).collect();
            if let Some(bad) = params.keys().find(|k| !accepted.contains(&k.as_str())) {
                return Err(ExtractError::InvalidRequest(if accepted.is_empty() {
                    format!(
                        "recipe {number} ({}) takes no params, got {bad:?}",
                        recipe.description
                    )
                } else {
                    format!(
                        "recipe {number} ({}) has no param {bad:?}; it accepts: {}",
                        recipe.description,
                        accepted.join(", ")
                    )
                }));
            }
            let vars: Vec<String> = recipe
                .params
                .iter()
                .map(|p| params.get(&p.name).unwrap_or(&p.default).clone())
                .collect();
            let program = jq::compile_with_vars(&recipe.filter, &accepted)?;
            raw = recipe.raw;
            let named: BTreeMap<String, String> = accepted
                .iter()
                .map(|n| (*n).to_owned())
                .zip(vars.iter().cloned())
                .collect();
            let mut records = Cursor::new(sample_bytes).chain(reader);
            let records: Box<dyn Read> = match slurp_path(&recipe.filter, recipe.slurp, fast_paths)
            {
                Some(fast) if fast.run(&mut records, size, window, guard, &mut out)? => {
                    return Ok(out.finish(mode, raw, |cut| next_part(req, mode, cut)));
                }
                Some(_) => Box::new(records_again(&file)?),
                None => Box::new(records),
            };
            let fast = fast_path(&recipe.filter, &named, recipe.slurp, raw, fast_paths);
            Job {
                program: &program,
                projection: project::analyze(&recipe.filter, recipe.slurp).filter(|_| fast_paths),
                fast,
                vars,
                slurp: recipe.slurp,
                window,
                render: Render { raw },
                guard,
            }
            .run(records, 2, &mut out)?;
        }
        Plan::Query {
            code,
            slurp,
            params,
        } => {
            let names: Vec<&str> = params.keys().map(String::as_str).collect();
            let program = jq::compile_with_vars(&code, &names)?;
            let reader: Box<dyn Read> = match slurp_path(&code, slurp, fast_paths) {
                Some(fast) if fast.run(&mut reader, size, window, guard, &mut out)? => {
                    return Ok(out.finish(mode, raw, |cut| next_part(req, mode, cut)));
                }
                Some(_) => Box::new(records_again(&file)?),
                None => Box::new(reader),
            };
            let fast = fast_path(&code, &params, slurp, false, fast_paths);
            Job {
                program: &program,
                projection: project::analyze(&code, slurp).filter(|_| fast_paths),
                fast,
                vars: params.into_values().collect(),
                slurp,
                window,
                render: Render { raw: false },
                guard,
            }
            .run(reader, 2, &mut out)?;
        }
        Plan::Structured(s) => s.run(reader, 2, guard, &mut out)?,
        Plan::Lines(window) => text::run_lines(&window, header.count, reader, guard, &mut out)?,
        Plan::Grep(g) => g.run(reader, guard, &mut out)?,
    }
    Ok(out.finish(mode, raw, |cut| next_part(req, mode, cut)))
}

/// The request that shows what comes after `cut`, when offset/limit can
/// express it: the next elements of a slurped result, or the next results
/// of a stream (recipe, query, structured).
fn next_part(req: &ExtractRequest, mode: ExtractMode, cut: Cut) -> Option<ExtractRequest> {
    let mut next = req.clone();
    match (mode, cut) {
        (
            ExtractMode::Recipe | ExtractMode::Query,
            Cut::Elements {
                from,
                shown,
                single: true,
                ..
            },
        ) if shown > 0 => {
            next.offset = Some(from + shown);
            next.limit = Some(req.limit.unwrap_or(shown));
        }
        (
            ExtractMode::Recipe | ExtractMode::Query | ExtractMode::Structured,
            Cut::Results { shown },
        ) if shown > 0 => {
            next.offset = Some(req.offset.unwrap_or(0) + shown);
        }
        _ => return None,
    }
    Some(next)
}

fn fast_path(
    code: &str,
    vars: &BTreeMap<String, String>,
    slurp: bool,
    raw: bool,
    enabled: bool,
) -> Option<fast::FastFilter> {
    if slurp || !enabled {
        return None;
    }
    fast::FastFilter::new(code, vars).filter(|f| f.fits_render(raw))
}

fn slurp_path(code: &str, slurp: bool, enabled: bool) -> Option<Slurp> {
    (slurp && enabled).then(|| Slurp::new(code)).flatten()
}

/// The records of `file` from the first again, after a fast path read
/// them and declined.
fn records_again(file: &ResolvedFile) -> Result<impl BufRead + use<>, ExtractError> {
    let mut reader = BufReader::with_capacity(256 * 1024, file.open()?);
    read_header(&mut reader, file)?;
    Ok(reader)
}

/// Reads the first [`SAMPLE_SIZE`] records (as the descriptor did), keeping
/// their bytes so the full run can start from the first record again. As
/// for the descriptor, a record serde does not read (a number past the
/// doubles, nesting past 128 levels) is not in the sample; the run reads
/// it as jq does.
fn read_sample(
    reader: &mut impl BufRead,
    file: &ResolvedFile,
) -> Result<(Vec<u8>, Vec<Value>), ExtractError> {
    let mut bytes = Vec::new();
    let mut sample = Vec::new();
    let mut taken = 0;
    while taken < SAMPLE_SIZE {
        let start = bytes.len();
        let n = reader
            .read_until(b'\n', &mut bytes)
            .map_err(|source| ExtractError::Io {
                path: file.path.clone(),
                source,
            })?;
        if n == 0 {
            break;
        }
        let line = bytes[start..].trim_ascii();
        if line.is_empty() {
            continue;
        }
        taken += 1;
        if let Ok(v) = serde_json::from_slice(line) {
            sample.push(v);
        }
    }
    Ok((bytes, sample))
}
