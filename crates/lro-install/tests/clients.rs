//! Each client's configuration, written in a temporary home from the
//! client's documented format (comments where the format allows them,
//! unknown keys, a literal secret), wrapped and restored.

use std::{fs, path::Path};

use lro_install::{Client, Env, Error, Leave, LroCommand, Options, Scope};

const LRO: &str = "/opt/lro/bin/lro";

struct Case {
    client: Client,
    /// The file, relative to the home (user scope) or the project.
    file: &'static str,
    project: bool,
    text: &'static str,
    /// Servers install wraps.
    wrapped: &'static [&'static str],
    /// The secret that must leave the arguments.
    secret: Option<&'static str>,
}

const CLAUDE_CODE_USER: &str = r#"{
  "numStartups": 12,
  "mcpServers": {
    "git": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-git", "--repository", "/src/app"],
      "env": {"GIT_TRACE": "0"}
    },
    "api": {
      "type": "http",
      "url": "https://api.example.com/mcp",
      "headers": {"Authorization": "Bearer sk-live-123"}
    },
    "legacy": {"type": "sse", "url": "https://old.example.com/sse"}
  },
  "projects": {
    "/work/app": {
      "allowedTools": [],
      "mcpServers": {
        "local-db": {"command": "npx", "args": ["-y", "@example/db-mcp"], "env": {"DB_URL": "postgres://localhost/app"}}
      },
      "disabledMcpServers": []
    }
  },
  "tipsHistory": {"new-user-warmup": 1}
}
"#;

const CLAUDE_DESKTOP: &str = r#"{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/Users/me/Desktop"
      ]
    }
  },
  "globalShortcut": "Ctrl+Space"
}
"#;

const CURSOR: &str = r#"{
  // Servers for every project.
  "mcpServers": {
    "github": {
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": { "Authorization": "Bearer ghp_secret", "X-MCP-Toolsets": "repos" }
    },
    "notes": {
      "type": "stdio",
      "command": "${userHome}/bin/notes-mcp",
      "args": ["--db", "${workspaceFolder}/notes.db"],
      "envFile": "${workspaceFolder}/.env", /* keep */
    },
    "linear": { "url": "https://mcp.linear.app/mcp" },
  },
}
"#;

const VSCODE: &str = r#"{
	// Workspace servers.
	"inputs": [
		{ "type": "promptString", "id": "api-key", "description": "API key", "password": true }
	],
	"servers": {
		"perplexity": {
			"type": "stdio",
			"command": "npx",
			"args": ["-y", "server-perplexity-ask"],
			"env": { "PERPLEXITY_API_KEY": "${input:api-key}" }
		},
		"remote": {
			"type": "http",
			"url": "https://mcp.example.com/mcp",
			"headers": { "Authorization": "Bearer ${input:api-key}" }
		},
		"events": { "type": "sse", "url": "https://events.example.com/sse" }
	}
}
"#;

const WINDSURF: &str = r#"{
  "mcpServers": {
    "figma": {
      "serverUrl": "https://figma.example.com/mcp",
      "headers": { "X-Api-Key": "figd_secret" },
      "disabled": false
    },
    "memory": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"],
      "disabledTools": ["delete_entities"]
    }
  }
}
"#;

const CODEX: &str = r#"model = "gpt-5-codex"
approval_policy = "on-request"

# MCP servers (https://developers.openai.com/codex/mcp)
[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]  # docs lookups
startup_timeout_sec = 20
enabled_tools = ["resolve-library-id", "get-library-docs"]

[mcp_servers.context7.env]
MY_ENV_VAR = "MY_ENV_VALUE"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
http_headers = { "X-Figma-Region" = "us-east-1" }

[mcp_servers.atlassian]
url = "https://mcp.atlassian.com/v1/mcp"
scopes = ["read:jira-work"]

[profiles.fast]
model = "gpt-5-mini"
"#;

const GEMINI: &str = r#"{
  // Gemini CLI strips comments.
  "theme": "GitHub",
  "mcpServers": {
    "pythonTools": {
      "command": "python",
      "args": ["-m", "my_mcp_server", "--port", "8080"],
      "cwd": "./mcp-servers/python",
      "env": { "DATABASE_URL": "$DB_CONNECTION_STRING", "API_KEY": "${EXTERNAL_API_KEY}" },
      "timeout": 15000,
      "trust": false,
      "includeTools": ["safe_tool"]
    },
    "httpServer": {
      "httpUrl": "https://api.example.com/mcp",
      "headers": { "Authorization": "Bearer gem-secret" }
    },
    "googleCloud": {
      "httpUrl": "https://my-gcp-service.run.app/mcp",
      "authProviderType": "google_credentials",
      "oauth": { "scopes": ["https://www.googleapis.com/auth/userinfo.email"] }
    }
  }
}
"#;

const CASES: &[Case] = &[
    Case {
        client: Client::ClaudeCode,
        file: ".claude.json",
        project: false,
        text: CLAUDE_CODE_USER,
        wrapped: &["git", "api"],
        secret: Some("Bearer sk-live-123"),
    },
    Case {
        client: Client::ClaudeCode,
        file: ".mcp.json",
        project: true,
        text: "{\n  \"mcpServers\": {\n    \"shared\": {\"command\": \"npx\", \"args\": [\"-y\", \"team-mcp\"]}\n  }\n}\n",
        wrapped: &["shared"],
        secret: None,
    },
    Case {
        client: Client::ClaudeDesktop,
        file: ".config/Claude/claude_desktop_config.json",
        project: false,
        text: CLAUDE_DESKTOP,
        wrapped: &["filesystem"],
        secret: None,
    },
    Case {
        client: Client::Cursor,
        file: ".cursor/mcp.json",
        project: false,
        text: CURSOR,
        wrapped: &["github", "notes"],
        secret: Some("Bearer ghp_secret"),
    },
    Case {
        client: Client::Vscode,
        file: ".vscode/mcp.json",
        project: true,
        text: VSCODE,
        wrapped: &["perplexity", "remote"],
        secret: Some("Bearer ${input:api-key}"),
    },
    Case {
        client: Client::Windsurf,
        file: ".codeium/windsurf/mcp_config.json",
        project: false,
        text: WINDSURF,
        wrapped: &["figma", "memory"],
        secret: Some("figd_secret"),
    },
    Case {
        client: Client::Codex,
        file: ".codex/config.toml",
        project: false,
        text: CODEX,
        wrapped: &["context7", "figma"],
        secret: None,
    },
    Case {
        client: Client::Gemini,
        file: ".gemini/settings.json",
        project: true,
        text: GEMINI,
        wrapped: &["pythonTools", "httpServer"],
        secret: Some("Bearer gem-secret"),
    },
];

struct Home {
    _dir: tempfile::TempDir,
    env: Env,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("work/app");
        fs::create_dir_all(project.join("src")).unwrap();
        let mut env = Env::new(dir.path().join("home"), project.join("src"));
        fs::create_dir_all(&env.home).unwrap();
        env.xdg_state_home = Some(dir.path().join("state"));
        Self { _dir: dir, env }
    }

    /// Writes a case's file: project files at the project's root, found
    /// from its `src` folder.
    fn write(&self, case: &Case) -> std::path::PathBuf {
        let base = if case.project {
            self.env.cwd.parent().unwrap().to_owned()
        } else {
            self.env.home.clone()
        };
        let path = base.join(case.file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, case.text).unwrap();
        path
    }
}

fn options() -> Options {
    Options::new(LroCommand::parse(LRO).unwrap())
}

fn scope(case: &Case) -> Option<Scope> {
    Some(if case.project {
        Scope::Project
    } else {
        Scope::User
    })
}

#[test]
fn every_client_is_wrapped_then_restored_byte_for_byte() {
    for case in CASES {
        let home = Home::new();
        let path = home.write(case);
        let mut opts = options();
        opts.scope = scope(case);

        let report = lro_install::install(case.client, &opts, &home.env).unwrap();
        let outcome = report.files[0].outcome.as_ref().unwrap();
        assert_eq!(outcome.changed, case.wrapped, "{}", case.file);
        let wrapped = fs::read_to_string(&path).unwrap();
        assert_ne!(wrapped, case.text);
        assert!(wrapped.contains(LRO), "{wrapped}");
        if let Some(secret) = case.secret {
            // Only in the environment: never in an argument.
            let args_lines: Vec<&str> = wrapped
                .lines()
                .filter(|l| l.contains("\"proxy\""))
                .collect();
            assert!(!args_lines.is_empty(), "{wrapped}");
            assert!(args_lines.iter().all(|l| !l.contains(secret)), "{wrapped}");
            assert!(wrapped.contains(&format!("\"{secret}\"")), "{wrapped}");
        }

        // A second install changes nothing.
        let again = lro_install::install(case.client, &opts, &home.env).unwrap();
        assert!(again.files[0].outcome.as_ref().unwrap().changed.is_empty());
        assert_eq!(fs::read_to_string(&path).unwrap(), wrapped, "{}", case.file);

        let report = lro_install::uninstall(case.client, &opts, &home.env).unwrap();
        assert_eq!(
            report.files[0].outcome.as_ref().unwrap().changed,
            case.wrapped
        );
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            case.text,
            "{}",
            case.file
        );
    }
}

#[test]
fn wrapped_entries_keep_their_keys_and_read_as_the_client_reads_them() {
    let home = Home::new();
    let case = &CASES[7];
    let path = home.write(case);
    lro_install::install(Client::Gemini, &options(), &home.env).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&strip_comments(&text)).unwrap();
    let py = &json["mcpServers"]["pythonTools"];
    assert_eq!(py["command"], LRO);
    assert_eq!(
        py["args"],
        serde_json::json!([
            "proxy",
            "--",
            "python",
            "-m",
            "my_mcp_server",
            "--port",
            "8080"
        ])
    );
    assert_eq!(py["cwd"], "./mcp-servers/python");
    assert_eq!(py["env"]["API_KEY"], "${EXTERNAL_API_KEY}");
    assert_eq!(py["includeTools"], serde_json::json!(["safe_tool"]));
    let http = &json["mcpServers"]["httpServer"];
    assert_eq!(
        http["args"],
        serde_json::json!([
            "proxy",
            "--url",
            "https://api.example.com/mcp",
            "--header",
            "Authorization: ${LRO_HEADER_AUTHORIZATION}"
        ])
    );
    assert_eq!(http["env"]["LRO_HEADER_AUTHORIZATION"], "Bearer gem-secret");
    assert!(http.get("headers").is_none() && http.get("httpUrl").is_none());
    assert!(text.contains("// Gemini CLI strips comments."));

    let codex = Home::new();
    let path = codex.write(&CASES[6]);
    lro_install::install(Client::Codex, &options(), &codex.env).unwrap();
    let toml: toml::Table = fs::read_to_string(&path).unwrap().parse().unwrap();
    let servers = &toml["mcp_servers"];
    let figma = &servers["figma"];
    assert_eq!(figma["command"].as_str(), Some(LRO));
    let args: Vec<&str> = figma["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        args,
        [
            "proxy",
            "--url",
            "https://mcp.figma.com/mcp",
            "--header",
            "X-Figma-Region: ${LRO_HEADER_X_FIGMA_REGION}",
            "--header",
            "Authorization: Bearer ${FIGMA_OAUTH_TOKEN}"
        ]
    );
    assert_eq!(
        figma["env_vars"].as_array().unwrap()[0].as_str(),
        Some("FIGMA_OAUTH_TOKEN")
    );
    assert_eq!(
        figma["env"]["LRO_HEADER_X_FIGMA_REGION"].as_str(),
        Some("us-east-1")
    );
    assert!(figma.get("url").is_none() && figma.get("bearer_token_env_var").is_none());
    // The table under the entry stays where it was, and still applies.
    assert_eq!(
        servers["context7"]["env"]["MY_ENV_VAR"].as_str(),
        Some("MY_ENV_VALUE")
    );
    assert_eq!(
        servers["context7"]["startup_timeout_sec"].as_integer(),
        Some(20)
    );
}

#[test]
fn entries_it_cannot_carry_are_left_and_named() {
    let home = Home::new();
    home.write(&CASES[0]);
    let mut opts = options();
    opts.scope = Some(Scope::User);
    let report = lro_install::install(Client::ClaudeCode, &opts, &home.env).unwrap();
    let left = &report.files[0].outcome.as_ref().unwrap().left;
    assert_eq!(
        left,
        &[("legacy".to_owned(), Leave::Transport("sse".into()))]
    );

    let home = Home::new();
    home.write(&CASES[3]);
    let report = lro_install::install(Client::Cursor, &options(), &home.env).unwrap();
    let left = &report.files[0].outcome.as_ref().unwrap().left;
    assert_eq!(left, &[("linear".to_owned(), Leave::MaybeOAuth)]);
    // Named with --only, a remote entry without credentials is wrapped.
    let mut opts = options();
    opts.only = vec!["linear".into()];
    let report = lro_install::install(Client::Cursor, &opts, &home.env).unwrap();
    assert_eq!(
        report.files[0].outcome.as_ref().unwrap().changed,
        ["linear"]
    );

    let home = Home::new();
    home.write(&CASES[6]);
    let report = lro_install::install(Client::Codex, &options(), &home.env).unwrap();
    let left = &report.files[0].outcome.as_ref().unwrap().left;
    assert_eq!(left, &[("atlassian".to_owned(), Leave::OAuth)]);

    let home = Home::new();
    home.write(&CASES[7]);
    let report = lro_install::install(Client::Gemini, &options(), &home.env).unwrap();
    let left = &report.files[0].outcome.as_ref().unwrap().left;
    assert_eq!(left, &[("googleCloud".to_owned(), Leave::OAuth)]);
}

#[test]
fn claude_codes_local_scope_is_the_projects_entry_of_the_user_file() {
    let home = Home::new();
    let path = home.write(&CASES[0]);
    let mut env = home.env.clone();
    env.cwd = "/work/app".into();
    let mut opts = options();
    opts.scope = Some(Scope::Local);
    let report = lro_install::install(Client::ClaudeCode, &opts, &env).unwrap();
    assert_eq!(
        report.files[0].outcome.as_ref().unwrap().changed,
        ["local-db"]
    );
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let local = &json["projects"]["/work/app"]["mcpServers"]["local-db"];
    assert_eq!(local["args"][2], "npx");
    assert_eq!(local["env"]["DB_URL"], "postgres://localhost/app");
    // The user scope's servers were not touched.
    assert_eq!(json["mcpServers"]["git"]["command"], "uvx");
    lro_install::uninstall(Client::ClaudeCode, &opts, &env).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), CLAUDE_CODE_USER);
}

#[test]
fn uninstall_restores_after_other_entries_were_edited() {
    let home = Home::new();
    let path = home.write(&CASES[3]);
    lro_install::install(Client::Cursor, &options(), &home.env).unwrap();
    // The user edits the file in between: a new server, and the one left.
    let edited = fs::read_to_string(&path)
        .unwrap()
        .replace(
            "\"linear\": { \"url\": \"https://mcp.linear.app/mcp\" },",
            "\"linear\": { \"url\": \"https://mcp.linear.app/v2\" },\n    \"new\": { \"command\": \"x\" },",
        );
    fs::write(&path, &edited).unwrap();
    let report = lro_install::uninstall(Client::Cursor, &options(), &home.env).unwrap();
    assert_eq!(
        report.files[0].outcome.as_ref().unwrap().changed,
        ["github", "notes"]
    );
    let expected = CURSOR.replace(
        "\"linear\": { \"url\": \"https://mcp.linear.app/mcp\" },",
        "\"linear\": { \"url\": \"https://mcp.linear.app/v2\" },\n    \"new\": { \"command\": \"x\" },",
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), expected);
}

#[test]
fn dry_run_prints_a_diff_and_writes_nothing() {
    let home = Home::new();
    let path = home.write(&CASES[2]);
    let mut opts = options();
    opts.dry_run = true;
    let report = lro_install::install(Client::ClaudeDesktop, &opts, &home.env).unwrap();
    let outcome = report.files[0].outcome.as_ref().unwrap();
    let diff = outcome.diff.as_deref().unwrap();
    assert!(diff.contains("-      \"command\": \"npx\","), "{diff}");
    assert!(
        diff.contains(&format!("+      \"command\": \"{LRO}\",")),
        "{diff}"
    );
    assert!(outcome.backup.is_none());
    assert_eq!(fs::read_to_string(&path).unwrap(), CLAUDE_DESKTOP);
    assert!(!home.env.state_dir().exists());
}

#[test]
fn a_file_that_does_not_parse_or_is_read_only_is_left_untouched() {
    let home = Home::new();
    let path = home.env.home.join(".cursor/mcp.json");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let broken = "{ \"mcpServers\": { \"a\": { \"command\": \"x\" }\n";
    fs::write(&path, broken).unwrap();
    let report = lro_install::install(Client::Cursor, &options(), &home.env).unwrap();
    let err = report.files[0].outcome.as_ref().unwrap_err();
    assert!(matches!(err, Error::Parse(_)), "{err:?}");
    assert!(err.to_string().contains("line"), "{err}");
    assert!(report.failed());
    assert_eq!(fs::read_to_string(&path).unwrap(), broken);

    fs::write(&path, CURSOR).unwrap();
    set_read_only(&path);
    let report = lro_install::install(Client::Cursor, &options(), &home.env).unwrap();
    assert!(matches!(report.files[0].outcome, Err(Error::ReadOnly)));
    assert_eq!(fs::read_to_string(&path).unwrap(), CURSOR);
    assert!(!home.env.state_dir().join("installs.json").exists());
}

#[test]
fn a_symlinked_file_stays_a_link_and_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt as _;

    let home = Home::new();
    let dotfiles = home.env.home.join("dotfiles/cursor-mcp.json");
    fs::create_dir_all(dotfiles.parent().unwrap()).unwrap();
    fs::write(&dotfiles, CURSOR).unwrap();
    fs::set_permissions(&dotfiles, fs::Permissions::from_mode(0o640)).unwrap();
    let link = home.env.home.join(".cursor/mcp.json");
    fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&dotfiles, &link).unwrap();
    lro_install::install(Client::Cursor, &options(), &home.env).unwrap();
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(fs::read_to_string(&dotfiles).unwrap().contains(LRO));
    assert_eq!(
        fs::metadata(&dotfiles).unwrap().permissions().mode() & 0o777,
        0o640
    );
    lro_install::uninstall(Client::Cursor, &options(), &home.env).unwrap();
    assert_eq!(fs::read_to_string(&dotfiles).unwrap(), CURSOR);
}

#[test]
fn no_file_is_reported_as_none_found() {
    let home = Home::new();
    let report = lro_install::install(Client::Windsurf, &options(), &home.env).unwrap();
    assert!(report.none_found());
}

fn set_read_only(path: &Path) {
    let mut perms = fs::metadata(path).unwrap().permissions();
    perms.set_readonly(true);
    fs::set_permissions(path, perms).unwrap();
}

/// JSON with `//` and `/* */` comments and trailing commas as plain JSON,
/// as the editors read it.
fn strip_comments(text: &str) -> String {
    let value = jsonc_parser::parse_to_serde_value(text, &Default::default())
        .unwrap()
        .unwrap();
    value.to_string()
}
