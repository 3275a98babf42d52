//! The clients `lro install` knows: where each keeps its servers, in which
//! format, and the keys its entries use.

use std::path::{Path, PathBuf};

/// An MCP client whose configuration `lro install` edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Client {
    /// Claude Code: `~/.claude.json` (user scope, and local scope under the
    /// project's path) and `.mcp.json` (project scope).
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Cursor: `~/.cursor/mcp.json` and `.cursor/mcp.json`.
    Cursor,
    /// VS Code: the user's `mcp.json` and the workspace's `.vscode/mcp.json`.
    Vscode,
    /// Windsurf: `~/.codeium/windsurf/mcp_config.json`.
    Windsurf,
    /// Codex CLI: `$CODEX_HOME/config.toml` and `.codex/config.toml`.
    Codex,
    /// Gemini CLI: `~/.gemini/settings.json` and `.gemini/settings.json`.
    Gemini,
}

impl Client {
    /// Every client, in the order `lro install --list` shows them.
    pub const ALL: [Client; 7] = [
        Client::ClaudeCode,
        Client::ClaudeDesktop,
        Client::Cursor,
        Client::Vscode,
        Client::Windsurf,
        Client::Codex,
        Client::Gemini,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::Windsurf => "windsurf",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }

    /// The client of a command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The scopes the client has.
    pub fn scopes(self) -> &'static [Scope] {
        match self {
            Client::ClaudeCode => &[Scope::User, Scope::Local, Scope::Project],
            Client::ClaudeDesktop | Client::Windsurf => &[Scope::User],
            _ => &[Scope::User, Scope::Project],
        }
    }

    pub(crate) fn dialect(self) -> &'static Dialect {
        match self {
            Client::ClaudeCode | Client::ClaudeDesktop | Client::Vscode => &TYPED,
            Client::Cursor => &CURSOR,
            Client::Windsurf => &WINDSURF,
            Client::Codex => &CODEX,
            Client::Gemini => &GEMINI,
        }
    }

    /// Every file of this client's configuration that `lro install` would
    /// read, in `scope` or in all its scopes: the user's whether it exists or
    /// not, the project's when found from the current directory upwards.
    pub fn places(self, scope: Option<Scope>, env: &Env) -> Vec<Place> {
        let home = &env.home;
        let config = env
            .xdg_config_home
            .clone()
            .unwrap_or_else(|| home.join(".config"));
        let app_support = home.join("Library/Application Support");
        let by_os =
            |linux: PathBuf, macos: PathBuf| if env.os == Os::MacOs { macos } else { linux };
        let (user, project, key): (PathBuf, Option<&str>, &str) = match self {
            Client::ClaudeCode => (home.join(".claude.json"), Some(".mcp.json"), "mcpServers"),
            Client::ClaudeDesktop => {
                let file = "Claude/claude_desktop_config.json";
                (
                    by_os(config.join(file), app_support.join(file)),
                    None,
                    "mcpServers",
                )
            }
            Client::Cursor => (
                home.join(".cursor/mcp.json"),
                Some(".cursor/mcp.json"),
                "mcpServers",
            ),
            Client::Vscode => {
                let file = "Code/User/mcp.json";
                (
                    by_os(config.join(file), app_support.join(file)),
                    Some(".vscode/mcp.json"),
                    "servers",
                )
            }
            Client::Windsurf => (
                home.join(".codeium/windsurf/mcp_config.json"),
                None,
                "mcpServers",
            ),
            Client::Codex => {
                let codex_home = env
                    .codex_home
                    .clone()
                    .unwrap_or_else(|| home.join(".codex"));
                (
                    codex_home.join("config.toml"),
                    Some(".codex/config.toml"),
                    "mcp_servers",
                )
            }
            Client::Gemini => (
                home.join(".gemini/settings.json"),
                Some(".gemini/settings.json"),
                "mcpServers",
            ),
        };
        let want = |s: Scope| scope.is_none_or(|w| w == s);
        let place = |scope, path, at: Vec<String>| Place {
            client: self,
            scope,
            path,
            at,
        };
        let mut places = Vec::new();
        if want(Scope::User) {
            places.push(place(Scope::User, user.clone(), vec![key.into()]));
        }
        if self == Client::ClaudeCode && want(Scope::Local) {
            // Local servers sit in the user's file, under the project's path.
            let project = env.cwd.to_string_lossy().into_owned();
            places.push(place(
                Scope::Local,
                user.clone(),
                vec!["projects".into(), project, key.into()],
            ));
        }
        // Walking up from a folder under the home finds the user's own file
        // (`~/.gemini/settings.json`): that is no project's.
        if let Some(name) = project
            && want(Scope::Project)
            && let Some(path) = find_up(&env.cwd, name)
            && !same_file(&path, &user)
        {
            places.push(place(Scope::Project, path, vec![key.into()]));
        }
        places
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// The nearest `name` in `dir` or a folder above it, stopping below the
/// filesystem's root.
fn find_up(dir: &Path, name: &str) -> Option<PathBuf> {
    dir.ancestors()
        .take_while(|d| d.parent().is_some())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Where a configuration applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The user's own file, for every project.
    User,
    /// A file in the project, shared with its other users.
    Project,
    /// Claude Code's servers for one project, kept in the user's file.
    Local,
}

impl Scope {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
        }
    }

    /// The scope of a command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        [Scope::User, Scope::Project, Scope::Local]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// One place a client keeps servers: a file, and where in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The client.
    pub client: Client,
    /// The scope.
    pub scope: Scope,
    /// The file.
    pub path: PathBuf,
    /// The keys leading to the map of servers (`["mcpServers"]`).
    pub at: Vec<String>,
}

impl Place {
    /// Whether the file is TOML (Codex) rather than JSON.
    pub fn is_toml(&self) -> bool {
        self.client == Client::Codex
    }
}

/// The operating system whose paths to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// Linux and other Unix: `$XDG_CONFIG_HOME`, by default `~/.config`.
    Linux,
    /// macOS: `~/Library/Application Support`.
    MacOs,
}

/// What the paths are made of, read from the process by [`Env::from_process`]
/// and given explicitly in tests.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Env {
    /// `$HOME`.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`, when set.
    pub xdg_config_home: Option<PathBuf>,
    /// `$XDG_STATE_HOME`, when set: the records of wrapped entries and the
    /// backups go under `lro/` there (by default `~/.local/state/lro`).
    pub xdg_state_home: Option<PathBuf>,
    /// `$CODEX_HOME`, when set.
    pub codex_home: Option<PathBuf>,
    /// The current directory: project files are found from it.
    pub cwd: PathBuf,
    /// Which system's paths.
    pub os: Os,
}

impl Env {
    /// An environment of `home` and `cwd` on Linux, with no XDG or Codex
    /// variables.
    pub fn new(home: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            home: home.into(),
            xdg_config_home: None,
            xdg_state_home: None,
            codex_home: None,
            cwd: cwd.into(),
            os: Os::Linux,
        }
    }

    /// The process's environment; `None` without `$HOME` or a current
    /// directory.
    pub fn from_process() -> Option<Self> {
        let var = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        Some(Self {
            home: var("HOME")?,
            xdg_config_home: var("XDG_CONFIG_HOME"),
            xdg_state_home: var("XDG_STATE_HOME"),
            codex_home: var("CODEX_HOME"),
            cwd: std::env::current_dir().ok()?,
            os: if cfg!(target_os = "macos") {
                Os::MacOs
            } else {
                Os::Linux
            },
        })
    }

    /// Where `lro install` keeps its records and backups.
    pub fn state_dir(&self) -> PathBuf {
        self.xdg_state_home
            .clone()
            .unwrap_or_else(|| self.home.join(".local/state"))
            .join("lro")
    }
}

/// The keys one client's entries use.
#[derive(Debug)]
pub(crate) struct Dialect {
    /// Keys holding a streamable-HTTP URL.
    pub url_keys: &'static [&'static str],
    /// `type` values of a transport `lro proxy --url` does not speak.
    pub other_transports: &'static [&'static str],
    /// Maps of literal header values.
    pub header_keys: &'static [&'static str],
    /// Maps of header name to the client's variable holding its value.
    pub env_header_keys: &'static [&'static str],
    /// Keys naming the client's variable holding a bearer token.
    pub bearer_env_keys: &'static [&'static str],
    /// The key listing variables passed from the client's environment to a
    /// stdio child (Codex's `env_vars`).
    pub pass_env_key: Option<&'static str>,
    /// Keys that mark an entry the client authorizes with OAuth.
    pub oauth_keys: &'static [&'static str],
}

impl Dialect {
    /// The `--header` argument for `name`, its value `prefix` and the
    /// variable `var`, which `lro proxy` expands. Clients that expand
    /// `${VAR}` themselves (Claude Code, Gemini CLI) leave a variable they do
    /// not have as written, and the `LRO_HEADER_` names are the entry's own.
    pub(crate) fn header_arg(&self, name: &str, prefix: &str, var: &str) -> String {
        format!("{name}: {prefix}${{{var}}}")
    }
}

const TYPED: Dialect = Dialect {
    url_keys: &["url"],
    other_transports: &["sse", "ws"],
    header_keys: &["headers"],
    env_header_keys: &[],
    bearer_env_keys: &[],
    pass_env_key: None,
    oauth_keys: &["oauth"],
};

const CURSOR: Dialect = Dialect {
    oauth_keys: &["auth", "oauth"],
    ..TYPED
};

const WINDSURF: Dialect = Dialect {
    url_keys: &["serverUrl", "url"],
    ..TYPED
};

const CODEX: Dialect = Dialect {
    url_keys: &["url"],
    other_transports: &[],
    header_keys: &["http_headers"],
    env_header_keys: &["env_http_headers"],
    bearer_env_keys: &["bearer_token_env_var"],
    pass_env_key: Some("env_vars"),
    oauth_keys: &["oauth", "oauth_resource", "scopes"],
};

// Gemini's `url` is streamable HTTP unless `type` says "sse" (without a
// type Gemini tries HTTP first); `httpUrl` is its older key.
const GEMINI: Dialect = Dialect {
    url_keys: &["httpUrl", "url"],
    other_transports: &["sse"],
    header_keys: &["headers"],
    env_header_keys: &[],
    bearer_env_keys: &[],
    pass_env_key: None,
    oauth_keys: &["oauth", "authProviderType"],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for c in Client::ALL {
            assert_eq!(Client::from_name(c.name()), Some(c));
        }
        assert_eq!(Client::from_name("claude"), None);
    }

    #[test]
    fn xdg_config_home_moves_the_linux_files_and_macos_has_its_own() {
        let mut env = Env::new("/h", "/h/p");
        env.xdg_config_home = Some("/x".into());
        let path = |c: Client, env: &Env| c.places(Some(Scope::User), env)[0].path.clone();
        assert_eq!(
            path(Client::ClaudeDesktop, &env),
            Path::new("/x/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            path(Client::Vscode, &env),
            Path::new("/x/Code/User/mcp.json")
        );
        env.os = Os::MacOs;
        assert_eq!(
            path(Client::ClaudeDesktop, &env),
            Path::new("/h/Library/Application Support/Claude/claude_desktop_config.json")
        );
        env.codex_home = Some("/c".into());
        assert_eq!(path(Client::Codex, &env), Path::new("/c/config.toml"));
    }

    #[test]
    fn the_users_own_file_is_never_also_a_project_file() {
        let home = tempfile::tempdir().unwrap();
        let file = home.path().join(".gemini/settings.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "{}").unwrap();
        let env = Env::new(home.path(), home.path().join("src/app"));
        let places = Client::Gemini.places(None, &env);
        assert_eq!(places.len(), 1);
        assert_eq!(places[0].scope, Scope::User);
    }
}
