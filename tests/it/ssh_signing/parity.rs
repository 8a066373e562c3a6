//! Our `allowed_signers` reader against OpenSSH's own (issue 22, finding 11): generated signer
//! files and signatures, each put to the real `ssh-keygen -Y verify` or `-Y find-principals`
//! and to [`Policy`], which must answer the same.
//!
//! What "the same" means, line by line. ssh-keygen reads a file lazily: it skips a line it
//! cannot parse (saying so on stderr) and stops at the first line that answers. We refuse the
//! whole file at its first bad line, so that a typo is found when the gate starts, not when an
//! approver is refused. So:
//!
//! - a file we accept: ssh-keygen must report no line it cannot parse, and must answer every
//!   question exactly as we do (who verifies, which principals a key has, at which time);
//! - a file we refuse at line N: ssh-keygen, made to read every line (a signature by a key no
//!   line lists), must report no bad line before N, and must report line N bad too, unless
//!   our reason is one of the named, documented ways we are stricter ([`Stricter`]).
//!
//! "We accept, ssh-keygen refuses" is never allowed. Cost: one ssh-keygen run per file, on as
//! many threads as there are cores; the count and the seed can be set with
//! `APPROVAL_GATE_PARITY_FILES` and `APPROVAL_GATE_PARITY_SEED`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use approval_gate::{Policy, SIGNATURE_NAMESPACE, SshKeygen, Timestamp};
use approval_gate_tests::ssh::Keys;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// Files checked by default: the issue asks for at least 10,000.
const DEFAULT_FILES: usize = 10_000;
const DEFAULT_SEED: u64 = 0x5eed_2022_0011;
/// What every signature signs.
const MESSAGE: &[u8] = b"approval-gate parity check: the statement an approver signs\n";
const OTHER_MESSAGE: &[u8] = b"some other statement\n";
/// The principals lines are written for and questions are asked about.
const NAMES: [&str; 7] = [
    "alice@example.com",
    "bob@example.com",
    "carol",
    "dave smith",
    "eve@example.org",
    "mallory",
    "a",
];
/// How ssh-keygen says it could not parse a line (sshsig.c, `parse_principals_key_and_options`).
const PARSE_ERRORS: [&str; 5] = [
    "invalid line",
    "invalid options",
    "missing key",
    "invalid key",
    "bad options",
];

/// The documented ways our reader refuses what ssh-keygen reads: the only "we refuse, it
/// accepts" allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stricter {
    /// `cert-authority`: this build verifies plain keys, so a CA line would trust nothing.
    CertAuthority,
    /// A `valid-after`/`valid-before` without `Z` (or `UTC`): ssh-keygen reads it in the
    /// verifier's time zone, so it means different instants on different machines.
    LocalTime,
}

/// A small deterministic generator (SplitMix64): the same seed makes the same files.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).expect("small")
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    fn pick_ref<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The keys lines list (`listed`), one no line lists (`stranger`), and signatures.
struct Pool {
    /// `listed[i]`'s key as `type base64`.
    keys: Vec<(String, String)>,
    /// `listed[i]`'s signature of [`MESSAGE`] in our namespace.
    good: Vec<String>,
    /// By `listed[0]`, in namespace `git`.
    other_namespace: String,
    /// By `listed[1]`, of [`OTHER_MESSAGE`].
    other_message: String,
    /// By the stranger, in a file: makes ssh-keygen read every line.
    stranger_file: PathBuf,
    message: PathBuf,
}

impl Pool {
    fn new(keys: &Keys) -> Self {
        let listed = [
            keys.approver("alice@example.com"),
            keys.approver("bob@example.com"),
            keys.approver_of_type("carol", "ecdsa"),
            keys.approver_of_type("dave", "rsa"),
        ];
        let stranger = keys.approver("stranger");
        let message = keys.dir().join("message");
        std::fs::write(&message, MESSAGE).expect("write the message");
        let stranger_file = keys.dir().join("stranger.sig");
        std::fs::write(&stranger_file, stranger.sign(MESSAGE)).expect("write a signature");
        Self {
            keys: listed
                .iter()
                .map(|a| {
                    let mut words = a.public.split(' ');
                    let kind = words.next().expect("type").to_owned();
                    (kind, words.next().expect("base64").to_owned())
                })
                .collect(),
            good: listed.iter().map(|a| a.sign(MESSAGE)).collect(),
            other_namespace: listed[0].sign_in_namespace("git", MESSAGE),
            other_message: listed[1].sign(OTHER_MESSAGE),
            stranger_file,
            message,
        }
    }
}

/// What is asked of one file we accept, besides the scan every file is in.
#[derive(Debug, Clone)]
enum Query {
    /// `-Y verify -I principal` of a signature of [`MESSAGE`].
    Verify {
        principal: String,
        signature: String,
    },
    /// `-Y find-principals` of a signature by a listed key.
    Find { signature: String },
}

/// One generated file, what we made of it and what ssh-keygen said.
struct Case {
    text: String,
    /// The verify time, in seconds since the epoch.
    at: i64,
    ours: Result<Policy, String>,
    /// Asked of files we accept.
    query: Option<Query>,
    /// Lines ssh-keygen could not parse, from the scan.
    bad_lines: BTreeSet<usize>,
    /// Its answer to `query`.
    theirs: Option<Theirs>,
}

/// What ssh-keygen said.
struct Theirs {
    success: bool,
    stdout: String,
    stderr: String,
    /// Lines it could not parse.
    bad_lines: BTreeSet<usize>,
}

/// Tally of a run.
#[derive(Default)]
struct Tally {
    files: usize,
    accepted: usize,
    verify: usize,
    find: usize,
    /// Questions both answered "yes" (a signature verifies, a key has principals).
    yes: usize,
    scans: usize,
    agreed_refusals: usize,
    stricter: BTreeMap<Stricter, usize>,
    disagreements: Vec<String>,
    disagreement_count: usize,
}

/// Files put to ssh-keygen in one scan.
const SCAN_BATCH: usize = 250;

/// Runs the differential over `files` generated files: returns the tally.
///
/// Every file is scanned: ssh-keygen reads each line on its own (a line's verdict does not
/// depend on the others), so files are scanned in batches, one after the other in one
/// signers file, with the stranger's signature that no line answers. Files we accept are then
/// asked one question each, alone, with a real signature.
fn run(files: usize, seed: u64) -> Tally {
    let keys = Keys::new();
    let started = Instant::now();
    let pool = Pool::new(&keys);
    eprintln!(
        "keys and signatures made in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let threads = setting("APPROVAL_GATE_PARITY_THREADS").map_or_else(
        || std::thread::available_parallelism().map_or(2, usize::from),
        |n| usize::try_from(n).expect("a count"),
    );
    let mut cases: Vec<Case> = (0..files)
        .map(|index| {
            let mut rng = Rng(seed
                ^ u64::try_from(index)
                    .expect("small")
                    .wrapping_mul(0x2545_f491_4f6c_dd1d));
            generate(&mut rng, &pool)
        })
        .collect();
    let dir = keys.dir();
    // The scans, then the questions, each spread over the threads.
    let chunks: Vec<&mut [Case]> = cases.chunks_mut(SCAN_BATCH).collect();
    in_parallel(threads, chunks, |worker, chunk| {
        scan(chunk, &pool, dir, worker);
    });
    let asked: Vec<&mut Case> = cases
        .iter_mut()
        .filter(|case| case.query.is_some())
        .collect();
    in_parallel(threads, asked, |worker, case| {
        let theirs = ask(case, &pool, dir, worker);
        case.theirs = Some(theirs);
    });
    let mut tally = Tally::default();
    for case in &cases {
        judge(case, &mut tally);
    }
    tally.scans = files.div_ceil(SCAN_BATCH);
    tally
}

/// Runs `work` on every item, on `threads` threads.
fn in_parallel<T: Send>(threads: usize, items: Vec<T>, work: impl Fn(usize, T) + Sync) {
    let queue = std::sync::Mutex::new(items.into_iter());
    std::thread::scope(|scope| {
        for worker in 0..threads {
            let (queue, work) = (&queue, &work);
            scope.spawn(move || {
                loop {
                    let Some(item) = queue.lock().expect("the queue").next() else {
                        break;
                    };
                    work(worker, item);
                }
            });
        }
    });
}

/// One file and its question.
fn generate(rng: &mut Rng, pool: &Pool) -> Case {
    let at = rng.pick(&[1_812_715_200_i64, 1_893_456_000, 1_000_000_000])
        + i64::try_from(rng.below(3)).expect("small");
    let text = signers_file(rng, pool, at);
    let ours = Policy::from_allowed_signers(&text).map_err(|e| e.to_string());
    // Mostly about keys and names the file lists, so that many answers are "yes".
    let keys: Vec<usize> = (0..pool.keys.len())
        .filter(|&key| text.contains(&pool.keys[key].1))
        .collect();
    let names: Vec<&str> = NAMES
        .into_iter()
        .filter(|name| text.contains(name))
        .collect();
    let query = ours.is_ok().then(|| {
        let listed =
            (!keys.is_empty() && rng.chance(80)).then(|| pool.good[rng.pick(&keys)].clone());
        if rng.chance(60) {
            Query::Verify {
                principal: if names.is_empty() || rng.chance(30) {
                    principal(rng)
                } else {
                    rng.pick(&names).to_owned()
                },
                signature: match listed {
                    Some(good) if rng.chance(15) => damaged(rng, &good),
                    Some(good) => good,
                    None => signature(rng, pool),
                },
            }
        } else {
            Query::Find {
                signature: listed.unwrap_or_else(|| rng.pick_ref(&pool.good).clone()),
            }
        }
    });
    Case {
        text,
        at,
        ours,
        query,
        bad_lines: BTreeSet::new(),
        theirs: None,
    }
}

/// Compares what we and ssh-keygen made of one file.
fn judge(case: &Case, tally: &mut Tally) {
    tally.files += 1;
    match &case.query {
        Some(Query::Verify { .. }) => tally.verify += 1,
        Some(Query::Find { .. }) => tally.find += 1,
        None => {}
    }
    let verdict = match &case.ours {
        Ok(policy) => {
            tally.accepted += 1;
            if case.theirs.as_ref().is_some_and(|theirs| theirs.success) {
                tally.yes += 1;
            }
            compare_answers(policy, case)
        }
        Err(error) => compare_refusal(error, case).map(|class| match class {
            Some(class) => *tally.stricter.entry(class).or_default() += 1,
            None => tally.agreed_refusals += 1,
        }),
    };
    if let Err(problem) = verdict {
        tally.disagreement_count += 1;
        if tally.disagreements.len() < 8 {
            let theirs = case.theirs.as_ref().map_or_else(String::new, |theirs| {
                format!(
                    "\n  ssh-keygen: {} stdout {:?} stderr {:?}",
                    if theirs.success { "ok" } else { "refused" },
                    theirs.stdout,
                    theirs.stderr
                )
            });
            tally.disagreements.push(format!(
                "{problem}\n  query: {:?} at {}{theirs}\n  lines ssh-keygen could not parse: \
                 {:?}\n  file:\n{}",
                case.query,
                case.at,
                case.bad_lines,
                abbreviated(&case.text)
            ));
        }
    }
}

/// `text` with long runs of one character written as `<c×n>`, so a report stays readable.
fn abbreviated(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let mut run = 1;
        while chars.peek() == Some(&c) {
            chars.next();
            run += 1;
        }
        if run > 12 {
            let _ = write!(out, "<{c}×{run}>");
        } else {
            out.extend(std::iter::repeat_n(c, run));
        }
    }
    out
}

/// A file we accept: no line may be bad to ssh-keygen, and the answer must be the same.
fn compare_answers(policy: &Policy, case: &Case) -> Result<(), String> {
    let theirs = case.theirs.as_ref().expect("every accepted file is asked");
    if let Some(line) = case.bad_lines.union(&theirs.bad_lines).next() {
        return Err(format!("we accept line {line}, ssh-keygen refuses it"));
    }
    let at = Timestamp::from_unix_millis(case.at * 1000);
    match case.query.as_ref().expect("asked") {
        Query::Verify {
            principal,
            signature,
        } => {
            let ours = policy.verifies_message(principal, MESSAGE, signature, at);
            if ours != theirs.success {
                return Err(format!(
                    "verify as {principal:?}: we say {ours}, ssh-keygen says {}",
                    theirs.success
                ));
            }
        }
        Query::Find { signature } => {
            // ssh-keygen prints the pattern list one pattern a line, up to an empty one.
            let ours = policy.find_principals(signature, at).map(|list| {
                list.split(',')
                    .take_while(|pattern| !pattern.is_empty())
                    .fold(String::new(), |mut out, pattern| {
                        out.push_str(pattern);
                        out.push('\n');
                        out
                    })
            });
            let theirs = theirs.success.then(|| theirs.stdout.clone());
            if ours != theirs {
                return Err(format!(
                    "find-principals: we say {ours:?}, ssh-keygen says {theirs:?}"
                ));
            }
        }
    }
    Ok(())
}

/// A file we refuse: the refusal must be ssh-keygen's too, or one of the documented
/// [`Stricter`] classes. Returns the class used, if any.
fn compare_refusal(error: &str, case: &Case) -> Result<Option<Stricter>, String> {
    if error.contains("no trusted key") {
        return match case.bad_lines.first() {
            None => Ok(None),
            Some(line) => Err(format!("we found no entry, ssh-keygen refuses line {line}")),
        };
    }
    let Some((line, reason)) = error
        .split_once("line ")
        .and_then(|(_, rest)| rest.split_once(": "))
        .and_then(|(n, reason)| Some((n.parse::<usize>().ok()?, reason)))
    else {
        return Err(format!("our refusal names no line: {error}"));
    };
    if let Some(earlier) = case.bad_lines.iter().find(|&&bad| bad < line) {
        return Err(format!(
            "we accept line {earlier}, ssh-keygen refuses it (we refuse line {line}: {reason})"
        ));
    }
    if case.bad_lines.contains(&line) {
        return Ok(None);
    }
    let text = case.text.split('\n').nth(line - 1).unwrap_or_default();
    if let Some(class) = stricter(reason, text) {
        return Ok(Some(class));
    }
    Err(format!(
        "we refuse line {line} ({reason}), ssh-keygen accepts it"
    ))
}

/// The documented class of a refusal, checked against the line rather than taken on trust.
fn stricter(reason: &str, line: &str) -> Option<Stricter> {
    if reason.contains("cert-authority") && line.to_ascii_lowercase().contains("cert-authority") {
        return Some(Stricter::CertAuthority);
    }
    if reason.contains("local time") {
        // The time named in the message must really lack a UTC suffix.
        let value = reason.split('"').nth(1)?;
        let lower = value.to_ascii_lowercase();
        if !lower.ends_with('z') && !lower.ends_with("utc") && line.contains(value) {
            return Some(Stricter::LocalTime);
        }
    }
    None
}

/// A command running the system's ssh-keygen, in UTC.
fn ssh_keygen_command() -> Command {
    let mut command = Command::new(SshKeygen::SYSTEM);
    command
        .env_clear()
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `command`, reading the lines of `file` (holding `text`) it could not parse.
fn run_ssh_keygen(mut command: Command, file: &Path, text: &str) -> Theirs {
    let out = command.output().expect("run ssh-keygen");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let prefix = format!("{}:", file.display());
    // OpenSSH 9.2 calls an empty line's key "missing"; later releases skip the line.
    let blank: Vec<bool> = text
        .split('\n')
        .map(|line| line.trim_matches([' ', '\t']).is_empty())
        .collect();
    let bad_lines = stderr
        .lines()
        .filter_map(|line| {
            let (number, message) = line.strip_prefix(&prefix)?.split_once(": ")?;
            let number: usize = number.parse().ok()?;
            (PARSE_ERRORS.iter().any(|e| message.starts_with(e)) && !blank[number - 1])
                .then_some(number)
        })
        .collect();
    Theirs {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
        bad_lines,
    }
}

/// One `-Y find-principals` of the stranger's signature over `cases` written one after the
/// other: records each file's lines ssh-keygen could not parse.
fn scan(cases: &mut [Case], pool: &Pool, dir: &Path, worker: usize) {
    let text: String = cases.iter().map(|case| case.text.as_str()).collect();
    let file = dir.join(format!("scan.{worker}"));
    std::fs::write(&file, &text).expect("write the signers files");
    let at = cases.first().map_or(0, |case| case.at);
    let mut command = ssh_keygen_command();
    command
        .args(["-Y", "find-principals", "-f"])
        .arg(&file)
        .arg("-s")
        .arg(&pool.stranger_file)
        .args(["-O", &format!("verify-time={}", ssh_time(at, 14, "Z"))])
        .stdin(Stdio::null());
    let theirs = run_ssh_keygen(command, &file, &text);
    assert!(
        !theirs.success,
        "no line lists the stranger: {}",
        theirs.stdout
    );
    let mut first = 1;
    for case in cases {
        let lines = case.text.matches('\n').count();
        case.bad_lines = theirs
            .bad_lines
            .range(first..first + lines)
            .map(|line| line - first + 1)
            .collect();
        first += lines;
    }
}

/// Asks ssh-keygen the question of one file we accept.
fn ask(case: &Case, pool: &Pool, dir: &Path, worker: usize) -> Theirs {
    let file = dir.join(format!("allowed_signers.{worker}"));
    std::fs::write(&file, &case.text).expect("write the signers file");
    let sig = dir.join(format!("signature.{worker}"));
    let mut command = ssh_keygen_command();
    let signature = match case.query.as_ref().expect("asked") {
        Query::Verify {
            principal,
            signature,
        } => {
            command
                .args([
                    "-Y",
                    "verify",
                    "-n",
                    SIGNATURE_NAMESPACE,
                    "-I",
                    principal,
                    "-f",
                ])
                .arg(&file)
                .stdin(File::open(&pool.message).expect("open the message"));
            signature
        }
        Query::Find { signature } => {
            command
                .args(["-Y", "find-principals", "-f"])
                .arg(&file)
                .stdin(Stdio::null());
            signature
        }
    };
    std::fs::write(&sig, signature).expect("write the signature");
    command
        .arg("-s")
        .arg(&sig)
        .args(["-O", &format!("verify-time={}", ssh_time(case.at, 14, "Z"))]);
    run_ssh_keygen(command, &file, &case.text)
}

/// A principal to verify as.
fn principal(rng: &mut Rng) -> String {
    match rng.below(10) {
        0..=7 => rng.pick(&NAMES).to_owned(),
        8 => format!("{}x", rng.pick(&NAMES)),
        _ => "b".repeat(1 + rng.below(1100)),
    }
}

/// A signature to verify: mostly good ones, some from elsewhere, some damaged.
fn signature(rng: &mut Rng, pool: &Pool) -> String {
    match rng.below(10) {
        0..=5 => rng.pick_ref(&pool.good).clone(),
        6 => pool.other_namespace.clone(),
        7 => pool.other_message.clone(),
        8 => std::fs::read_to_string(&pool.stranger_file).expect("a signature"),
        _ => {
            let good = rng.pick_ref(&pool.good).clone();
            damaged(rng, &good)
        }
    }
}

/// `armored` with one byte of its blob changed, armored again as ssh-keygen armors.
fn damaged(rng: &mut Rng, armored: &str) -> String {
    let body: String = armored
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let mut blob = STANDARD.decode(body).expect("an armored signature");
    let at = rng.below(blob.len());
    blob[at] ^= 1 << rng.below(8);
    let body = STANDARD.encode(blob);
    let mut out = String::from("-----BEGIN SSH SIGNATURE-----\n");
    for chunk in body.as_bytes().chunks(70) {
        out.push_str(std::str::from_utf8(chunk).expect("base64"));
        out.push('\n');
    }
    out.push_str("-----END SSH SIGNATURE-----\n");
    out
}

/// A whole file: entries among comments and blank lines.
fn signers_file(rng: &mut Rng, pool: &Pool, at: i64) -> String {
    let mut text = String::new();
    for _ in 0..=rng.below(4) {
        match rng.below(10) {
            0 => text.push_str(rng.pick(&["", "   ", "\t", " \t "])),
            1 => text.push_str(rng.pick(&["# approvers", "  # indented comment", "#"])),
            _ => {}
        }
        if rng.below(10) == 0 {
            text.push('\n');
        }
        text.push_str(&entry(rng, pool, at));
        text.push('\n');
    }
    text
}

/// One `principals [options] key [comment]` line, sometimes broken.
fn entry(rng: &mut Rng, pool: &Pool, at: i64) -> String {
    let mut line = String::new();
    if rng.chance(10) {
        line.push_str(rng.pick(&[" ", "\t", "  "]));
    }
    line.push_str(&principals(rng));
    line.push_str(gap(rng));
    if rng.chance(40) {
        line.push_str(&options(rng, at));
        line.push_str(gap(rng));
    }
    let key = rng.below(pool.keys.len());
    let (kind, base64) = &pool.keys[key];
    match rng.below(80) {
        0 => {} // no key at all
        1 => _ = write!(line, "ssh-ed25519 {}", pool.keys[2].1),
        2 => _ = write!(line, "{kind} {}", &base64[..base64.len() - 4]),
        3 => _ = write!(line, "{kind} AAAAC3NzaC1lZDI1NTE5AAAAIAA"),
        4 => _ = write!(line, "rsa-sha2-512 {}", pool.keys[3].1),
        5 => _ = write!(line, "Ssh-ed25519 {}", pool.keys[0].1),
        _ => _ = write!(line, "{kind}{}{base64}", gap(rng)),
    }
    if rng.chance(20) {
        line.push_str(rng.pick(&[" a comment", "\tcomment with namespaces=\"x\"", " "]));
    }
    line
}

fn gap(rng: &mut Rng) -> &'static str {
    rng.pick(&[" ", " ", " ", " ", "\t", "  ", " \t"])
}

/// A principals field: a pattern list, sometimes quoted, sometimes broken.
fn principals(rng: &mut Rng) -> String {
    let list = (0..=rng.below(3))
        .map(|_| sub_pattern(rng))
        .collect::<Vec<_>>()
        .join(",");
    let quote = list.contains([' ', '\t', '"']) || rng.chance(15);
    match rng.below(80) {
        0 => format!("\"{list}"),       // never closed
        1 => format!("x\"{list}\""),    // a quote inside the word
        2 => format!("\"{list}\"junk"), // no blank after the quotes
        _ if quote => format!("\"{list}\""),
        _ => list,
    }
}

/// One pattern of a list: names, globs, negations, empties and long ones.
fn sub_pattern(rng: &mut Rng) -> String {
    let negate = if rng.chance(12) { "!" } else { "" };
    let pattern = match rng.below(20) {
        0..=9 => rng.pick(&NAMES).to_owned(),
        10 => "*".to_owned(),
        11 => "*@example.com".to_owned(),
        12 => (rng.pick(&["?ob@example.com", "a*", "*o*", "c?rol", "*.org", "??"])).to_owned(),
        13 => String::new(),
        // Around OpenSSH's 1,023-byte limit on one pattern of a list.
        14 | 15 => "*".repeat(1016 + rng.below(12)),
        16 => format!("{}{}", rng.pick(&NAMES), "*".repeat(1000 + rng.below(30))),
        17 => "b".repeat(1016 + rng.below(12)),
        _ => (rng.pick(&["dave smith", "x y", "\"q\""])).to_owned(),
    };
    format!("{negate}{pattern}")
}

/// An options field: known, unknown, repeated, malformed.
fn options(rng: &mut Rng, at: i64) -> String {
    let mut items: Vec<String> = Vec::new();
    for _ in 0..=rng.below(3) {
        let item = match rng.below(24) {
            0..=4 => format!("namespaces=\"{}\"", namespaces(rng)),
            9..=12 => format!("valid-before=\"{}\"", time(rng, at)),
            13 => "cert-authority".to_owned(),
            14 => (rng.pick(&[
                "frobnicate",
                "no-touch-required",
                "verify-required",
                "x=\"y\"",
            ]))
            .to_owned(),
            15 => (rng.pick(&[
                "namespaces=approval-gate",
                "valid-after=",
                "valid-before=\"\"",
                "namespaces=\"approval-gate",
                "namespaces=\"a\\\"b\"",
                "namespaces=\"approval-gate\"x",
                "cert-authorityx",
            ]))
            .to_owned(),
            16 => format!("NAMESPACES=\"{}\"", namespaces(rng)),
            17 => format!("Valid-Before=\"{}\"", time(rng, at)),
            18 | 19 if !items.is_empty() => rng.pick_ref(&items).clone(),
            20 => String::new(),
            _ => format!("valid-after=\"{}\"", time(rng, at)),
        };
        items.push(item);
    }
    items.join(",")
}

fn namespaces(rng: &mut Rng) -> String {
    (rng.pick(&[
        "approval-gate",
        "git",
        "file,git",
        "*",
        "approval-*",
        "*,!approval-gate",
        "approval-gate,git",
        "",
        "file, approval-gate",
        "approval-gate ",
    ]))
    .to_owned()
}

/// A time near `at` in one of ssh-keygen's formats, or something like one.
fn time(rng: &mut Rng, at: i64) -> String {
    let base = match rng.below(12) {
        0 => 0,
        1 => 1,
        2 => -86_400,
        3 => 253_402_214_400, // 9999-12-31
        _ => {
            at + rng.pick(&[
                0,
                1,
                -1,
                59,
                -59,
                3600,
                -3600,
                86_400,
                -86_400,
                40_000_000,
                -40_000_000,
            ])
        }
    };
    let digits = rng.pick(&[8, 12, 14, 14]);
    let suffix = rng.pick(&[
        "Z", "Z", "Z", "Z", "Z", "Z", "z", "UTC", "utc", "", "Zz", " Z",
    ]);
    let mut text = ssh_time(base, digits, suffix);
    if rng.chance(10) {
        // Break one field: impossible dates and times, blanks, letters, lengths.
        let (at, with) = rng.pick(&[
            (4, "13"),
            (4, "00"),
            (6, "00"),
            (6, "32"),
            (6, "31"),
            (4, " 1"),
            (6, " 9"),
            (0, " 202"),
            (0, "1969"),
            (0, "0000"),
            (4, "02"),
            (6, "30"),
            (8, "24"),
            (10, "60"),
            (12, "60"),
            (12, "61"),
            (12, "62"),
            (8, "1x"),
            (0, "197"),
        ]);
        if at + with.len() <= digits {
            text.replace_range(at..at + with.len(), with);
        } else {
            text.insert(0, '1');
        }
    }
    text
}

/// `secs` as `YYYYMMDD[HHMM[SS]]` (the first `digits` of it) and `suffix`.
fn ssh_time(secs: i64, digits: usize, suffix: &str) -> String {
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let full = format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    );
    format!("{}{suffix}", &full[..digits.min(full.len())])
}

/// Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn setting(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let text = text.trim();
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

#[test]
fn allowed_signers_are_read_exactly_as_ssh_keygen_reads_them() {
    let files = setting("APPROVAL_GATE_PARITY_FILES")
        .map_or(DEFAULT_FILES, |n| usize::try_from(n).expect("a count"));
    let seed = setting("APPROVAL_GATE_PARITY_SEED").unwrap_or(DEFAULT_SEED);
    let started = Instant::now();
    let tally = run(files, seed);
    let mut summary = String::new();
    let _ = write!(
        summary,
        "{} files (seed {seed:#x}) in {:.1} s: {} accepted, {} refusals shared with ssh-keygen, \
         stricter {:?}; ssh-keygen runs: {} verify, {} find-principals ({} answered yes), {} scans; \
         {} disagreements",
        tally.files,
        started.elapsed().as_secs_f64(),
        tally.accepted,
        tally.agreed_refusals,
        tally.stricter,
        tally.verify,
        tally.find,
        tally.yes,
        tally.scans,
        tally.disagreement_count,
    );
    eprintln!("{summary}");
    assert!(
        tally.disagreements.is_empty(),
        "{summary}\n\n{}",
        tally.disagreements.join("\n\n")
    );
    assert_eq!(tally.files, files);
    // The generator must reach every kind of answer, or the comparison proves little.
    assert!(
        tally.accepted * 5 > files && tally.accepted * 5 < files * 4,
        "{summary}"
    );
    assert!(tally.agreed_refusals * 10 > files, "{summary}");
    assert!(tally.yes * 4 > tally.verify + tally.find, "{summary}");
}

/// Where the length of each field of an SSHSIG blob is: the key, the namespace, the reserved
/// field, the hash algorithm and the signature, after the magic and the version.
fn field_lengths(blob: &[u8]) -> Vec<usize> {
    let mut at = 10;
    let mut lengths = Vec::new();
    while at + 4 <= blob.len() {
        lengths.push(at);
        let len = u32::from_be_bytes(blob[at..at + 4].try_into().expect("four bytes"));
        at += 4 + usize::try_from(len).expect("small");
    }
    lengths
}

/// `armored` with the length of field `field` overstated by 65,536.
fn overstated(armored: &str, field: usize) -> String {
    let body: String = armored
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let mut blob = STANDARD.decode(body).expect("an armored signature");
    let at = field_lengths(&blob)[field];
    blob[at + 1] ^= 1;
    let body = STANDARD.encode(blob);
    let mut out = String::from("-----BEGIN SSH SIGNATURE-----\n");
    for chunk in body.as_bytes().chunks(70) {
        out.push_str(std::str::from_utf8(chunk).expect("base64"));
        out.push('\n');
    }
    out.push_str("-----END SSH SIGNATURE-----\n");
    out
}

/// What the differential found in signatures: ssh-key's decoder took a signature whose key or
/// signature length overstates what follows, which ssh-keygen refuses ("incomplete
/// message"). Such a signature is no approver's: the gate refuses it as ssh-keygen does.
#[test]
fn a_signature_whose_lengths_overstate_what_follows_is_refused_as_ssh_keygen_refuses_it() {
    let keys = Keys::new();
    let alice = keys.approver("alice@example.com");
    let fx = approval_gate_tests::Fixture::new();
    let gate = approval_gate::Gate::builder()
        .dir(&fx.dir)
        .clock(fx.clock.clone())
        .policy(keys.policy(&[&alice]).require("*", 1).expect("a quorum"))
        .open()
        .expect("a gate");
    let id = gate
        .request_approval(approval_gate::NewRequest::new("pay 5 EUR", "rent"))
        .expect("filed")
        .request
        .id();
    let request = gate.status(id).expect("status").into_request();
    let statement = request
        .decision_statement(&alice.principal)
        .expect("a statement");
    let good = alice.sign(&statement);
    let signers = keys.allowed_signers(&[&alice]);
    let decision = |signature: String| {
        approval_gate::Decision::by("alice").signed(alice.principal.clone(), signature)
    };
    for field in [0, 4] {
        let bad = overstated(&good, field);
        assert!(
            !approval_gate_tests::ssh::ssh_keygen_verifies(
                &signers,
                &alice.principal,
                &bad,
                &statement
            ),
            "ssh-keygen takes field {field} overstated"
        );
        let error = gate
            .approve(id, &decision(bad))
            .expect_err("an overstated length");
        assert_eq!(
            error.code(),
            approval_gate::ErrorCode::BadSignature,
            "{error}"
        );
    }
    assert!(approval_gate_tests::ssh::ssh_keygen_verifies(
        &signers,
        &alice.principal,
        &good,
        &statement
    ));
    gate.approve(id, &decision(good))
        .expect("the genuine signature");
}
