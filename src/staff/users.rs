//! Staff accounts: roles, the `users.json` file (argon2id PHC hashes, never plain passwords) and `add_user`.
//!
//! File format (the main crate keeps it in the lake's `_vigie/config/`):
//!
//! ```json
//! {"users": [{"username": "alice", "role": "reviewer", "hash": "$argon2id$v=19$m=19456,t=2,p=1$..."}]}
//! ```
//!
//! The dashboard reads the file at every login attempt, so users added with
//! `vigie admin add-user` (which calls [`add_user`]) can log in without a restart.

pub use crate::review::Role;
use std::path::Path;
use std::sync::OnceLock;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

/// One staff account as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecord {
    /// Login name.
    pub username: String,
    /// Role.
    pub role: Role,
    /// Argon2 PHC string.
    pub hash: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct UserJson {
    username: String,
    role: String,
    hash: String,
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct UsersJson {
    users: Vec<UserJson>,
}

/// Why a users-file operation failed.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    #[error("invalid username {0:?}: use 1-64 characters among A-Z a-z 0-9 . _ -")]
    BadUsername(String),
    #[error("password too short: at least {MIN_PASSWORD} characters")]
    ShortPassword,
    #[error("users file {path}: {msg}")]
    File { path: String, msg: String },
    #[error("password hashing failed: {0}")]
    Hash(String),
}

/// Minimum password length accepted by [`add_user`].
pub const MIN_PASSWORD: usize = 10;

/// Whether a username is acceptable.
pub fn valid_username(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn file_err(path: &Path, msg: impl std::fmt::Display) -> UserError {
    UserError::File {
        path: path.display().to_string(),
        msg: msg.to_string(),
    }
}

/// Reads the users file (a missing file is an empty list).
pub fn load_users(path: &Path) -> Result<Vec<UserRecord>, UserError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(file_err(path, e)),
    };
    let parsed: UsersJson = serde_json::from_str(&text).map_err(|e| file_err(path, e))?;
    parsed
        .users
        .into_iter()
        .map(|u| {
            let role = Role::parse(&u.role).ok_or_else(|| {
                file_err(
                    path,
                    format!("user {:?}: unknown role {:?}", u.username, u.role),
                )
            })?;
            Ok(UserRecord {
                username: u.username,
                role,
                hash: u.hash,
            })
        })
        .collect()
}

/// Hashes a password with argon2id (default parameters) and a random salt.
pub fn hash_password(password: &str) -> Result<String, UserError> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| UserError::Hash(e.to_string()))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| UserError::Hash(e.to_string()))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| UserError::Hash(e.to_string()))
}

/// A fingerprint of a user's record (role and password hash): a session opened with one
/// ends when the record changes.
pub fn record_fingerprint(u: &UserRecord) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(format!("{}\n{}", u.role, u.hash).as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Checks a password against a PHC hash (false on any malformed hash).
pub fn verify_password(hash: &str, password: &str) -> bool {
    match PasswordHash::new(hash) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// A valid hash of a random password, verified against when the username is
/// unknown so that unknown and known users take the same time.
pub(crate) fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let mut pw = [0u8; 16];
        let _ = getrandom::fill(&mut pw);
        let pw: String = pw.iter().map(|b| format!("{b:02x}")).collect();
        hash_password(&pw).unwrap_or_default()
    })
}

/// Whether [`add_user`] created the user or replaced an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddOutcome {
    Added,
    Replaced,
}

/// Adds a user to the users file, or replaces the role and password of an
/// existing one. Creates the file (mode 0600) when missing; writes atomically.
pub fn add_user(
    path: &Path,
    name: &str,
    role: Role,
    password: &str,
) -> Result<AddOutcome, UserError> {
    if !valid_username(name) {
        return Err(UserError::BadUsername(name.to_owned()));
    }
    if password.chars().count() < MIN_PASSWORD {
        return Err(UserError::ShortPassword);
    }
    let hash = hash_password(password)?;
    let mut users = load_users(path)?;
    let outcome = match users.iter_mut().find(|u| u.username == name) {
        Some(u) => {
            u.role = role;
            u.hash = hash;
            AddOutcome::Replaced
        }
        None => {
            users.push(UserRecord {
                username: name.to_owned(),
                role,
                hash,
            });
            AddOutcome::Added
        }
    };
    let json = UsersJson {
        users: users
            .into_iter()
            .map(|u| UserJson {
                username: u.username,
                role: u.role.as_str().to_owned(),
                hash: u.hash,
            })
            .collect(),
    };
    let text = serde_json::to_string_pretty(&json).map_err(|e| file_err(path, e))?;
    let tmp = path.with_extension("json.tmp");
    write_private(&tmp, text.as_bytes()).map_err(|e| file_err(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| file_err(path, e))?;
    Ok(outcome)
}

fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_and_verify() {
        let dir = std::env::temp_dir().join(format!("vigie-users-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("users.json");
        let _ = std::fs::remove_file(&path);
        assert!(matches!(
            add_user(&path, "alice", Role::Reviewer, "correct horse"),
            Ok(AddOutcome::Added)
        ));
        assert!(matches!(
            add_user(&path, "alice", Role::Admin, "battery staple"),
            Ok(AddOutcome::Replaced)
        ));
        assert!(matches!(
            add_user(&path, "bad name", Role::Admin, "battery staple"),
            Err(UserError::BadUsername(_))
        ));
        assert!(matches!(
            add_user(&path, "bob", Role::Admin, "short"),
            Err(UserError::ShortPassword)
        ));
        let users = load_users(&path).unwrap_or_default();
        assert_eq!(users.len(), 1);
        assert_eq!(users[0].role, Role::Admin);
        assert!(users[0].hash.starts_with("$argon2id$"));
        assert!(
            !std::fs::read_to_string(&path)
                .unwrap_or_default()
                .contains("battery")
        );
        assert!(verify_password(&users[0].hash, "battery staple"));
        assert!(!verify_password(&users[0].hash, "correct horse"));
        assert!(!verify_password("garbage", "x"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
