"""Numbered schema migrations. Append only: never edit one that has shipped."""

MIGRATIONS: list[str] = [
    # 1: every table of the design, even those later features fill.
    """
    CREATE TABLE organisations (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        subdomain TEXT NOT NULL UNIQUE,
        status TEXT NOT NULL DEFAULT 'trial'
            CHECK (status IN ('trial', 'active', 'payment_missing', 'deleted')),
        trial_ends_at TEXT,
        branding INTEGER NOT NULL DEFAULT 0,
        branding_logo TEXT,
        branding_colour TEXT,
        user_terms TEXT NOT NULL DEFAULT '',
        default_source_id INTEGER,
        log_retention_days INTEGER,
        created_at TEXT NOT NULL
    );

    CREATE TABLE sources (
        id INTEGER PRIMARY KEY,
        org_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('local', 's3', 'sftp')),
        config TEXT NOT NULL DEFAULT '{}',
        read_only INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'unknown',
        last_error TEXT NOT NULL DEFAULT '',
        checked_at TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (org_id, name)
    );
    CREATE INDEX sources_org ON sources(org_id);

    CREATE TABLE profiles (
        id INTEGER PRIMARY KEY,
        org_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        username TEXT NOT NULL UNIQUE COLLATE NOCASE,
        email TEXT NOT NULL DEFAULT '',
        password_hash TEXT NOT NULL DEFAULT '',
        is_admin INTEGER NOT NULL DEFAULT 0,
        is_superuser INTEGER NOT NULL DEFAULT 0,
        active INTEGER NOT NULL DEFAULT 1,
        source_id INTEGER REFERENCES sources(id) ON DELETE SET NULL,
        home TEXT NOT NULL DEFAULT '/',
        permissions TEXT NOT NULL DEFAULT '[]',
        protocols TEXT NOT NULL DEFAULT '[]',
        ssh_keys TEXT NOT NULL DEFAULT '[]',
        ip_allow TEXT NOT NULL DEFAULT '[]',
        quota_bytes INTEGER,
        quota_files INTEGER,
        expires_at TEXT,
        last_login TEXT,
        password_changed_at TEXT,
        created_at TEXT NOT NULL
    );
    CREATE INDEX profiles_org ON profiles(org_id);
    CREATE INDEX profiles_email ON profiles(email COLLATE NOCASE);

    CREATE TABLE api_tokens (
        id INTEGER PRIMARY KEY,
        org_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        prefix TEXT NOT NULL UNIQUE,
        secret_hash TEXT NOT NULL,
        scopes TEXT NOT NULL DEFAULT '[]',
        created_by INTEGER REFERENCES profiles(id) ON DELETE SET NULL,
        expires_at TEXT,
        last_used_at TEXT,
        revoked INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL
    );
    CREATE INDEX api_tokens_org ON api_tokens(org_id);

    CREATE TABLE mailboxes (
        id INTEGER PRIMARY KEY,
        org_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        host TEXT NOT NULL,
        port INTEGER NOT NULL,
        security TEXT NOT NULL DEFAULT 'tls' CHECK (security IN ('tls', 'starttls', 'none')),
        verify_tls INTEGER NOT NULL DEFAULT 1,
        username TEXT NOT NULL,
        password_encrypted TEXT NOT NULL DEFAULT '',
        folder TEXT NOT NULL DEFAULT 'INBOX',
        source_id INTEGER REFERENCES sources(id) ON DELETE SET NULL,
        target_folder TEXT NOT NULL DEFAULT '/mail/{date}',
        keep TEXT NOT NULL DEFAULT 'attachments' CHECK (keep IN ('attachments', 'message')),
        after TEXT NOT NULL DEFAULT 'seen' CHECK (after IN ('seen', 'move', 'delete')),
        move_to TEXT NOT NULL DEFAULT '',
        interval_minutes INTEGER NOT NULL DEFAULT 5,
        enabled INTEGER NOT NULL DEFAULT 1,
        uid_validity INTEGER,
        last_uid INTEGER,
        created_at TEXT NOT NULL
    );
    CREATE INDEX mailboxes_org ON mailboxes(org_id);

    CREATE TABLE mailbox_runs (
        id INTEGER PRIMARY KEY,
        org_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        mailbox_id INTEGER NOT NULL REFERENCES mailboxes(id) ON DELETE CASCADE,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL DEFAULT 'running',
        messages INTEGER NOT NULL DEFAULT 0,
        files INTEGER NOT NULL DEFAULT 0,
        bytes INTEGER NOT NULL DEFAULT 0,
        error TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX mailbox_runs_mailbox ON mailbox_runs(mailbox_id, started_at);

    CREATE TABLE mailbox_messages (
        mailbox_id INTEGER NOT NULL REFERENCES mailboxes(id) ON DELETE CASCADE,
        message_key TEXT NOT NULL,
        filed_at TEXT NOT NULL,
        PRIMARY KEY (mailbox_id, message_key)
    );

    CREATE TABLE shares (
        id INTEGER PRIMARY KEY,
        org_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        token TEXT NOT NULL UNIQUE,
        expires_at TEXT,
        password_hash TEXT,
        max_downloads INTEGER,
        downloads INTEGER NOT NULL DEFAULT 0,
        upload_only INTEGER NOT NULL DEFAULT 0,
        revoked INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL
    );
    CREATE INDEX shares_org ON shares(org_id);

    CREATE TABLE logs (
        id INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL,
        org_id INTEGER REFERENCES organisations(id) ON DELETE CASCADE,
        profile_id INTEGER REFERENCES profiles(id) ON DELETE SET NULL,
        username TEXT NOT NULL DEFAULT '',
        protocol TEXT NOT NULL,
        action TEXT NOT NULL,
        path TEXT NOT NULL DEFAULT '',
        bytes INTEGER,
        remote_address TEXT NOT NULL DEFAULT '',
        message TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX logs_org_created ON logs(org_id, created_at);
    CREATE INDEX logs_org_action_created ON logs(org_id, action, created_at);
    CREATE INDEX logs_profile ON logs(profile_id);
    """,
    # 2: refuse passwords over plain-text FTP, per organisation or per profile
    """
    ALTER TABLE organisations ADD COLUMN require_tls INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE profiles ADD COLUMN require_tls INTEGER;
    """,
    # 3: refresh tokens, single use: a used or revoked one is refused
    """
    CREATE TABLE refresh_tokens (
        jti TEXT PRIMARY KEY,
        profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
        expires_at TEXT NOT NULL,
        used_at TEXT,
        revoked INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX refresh_tokens_profile ON refresh_tokens(profile_id);
    """,
    # 4: resumable uploads (tus): one row per upload in progress; the partial file
    # lives beside its target under a hidden name until the last byte arrives
    """
    CREATE TABLE uploads (
        id TEXT PRIMARY KEY,
        org_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
        source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
        home TEXT NOT NULL,
        path TEXT NOT NULL,
        temp_name TEXT NOT NULL,
        length INTEGER NOT NULL,
        "offset" INTEGER NOT NULL DEFAULT 0,
        metadata TEXT NOT NULL DEFAULT '{}',
        overwrite INTEGER NOT NULL DEFAULT 0,
        expires_at TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX uploads_profile ON uploads(profile_id);
    CREATE INDEX uploads_expires ON uploads(expires_at);
    """,
    # 5: the dashboard's counts, kept by triggers as log rows come and go, so the
    # overview reads a few hundred summary rows instead of counting millions of logs.
    # A day is the first 10 characters of created_at (UTC); profile_id 0 stands for none.
    """
    CREATE TABLE log_daily (
        org_id INTEGER NOT NULL,
        day TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (org_id, day)
    ) WITHOUT ROWID;
    CREATE TABLE transfer_daily (
        org_id INTEGER NOT NULL,
        day TEXT NOT NULL,
        protocol TEXT NOT NULL,
        profile_id INTEGER NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (org_id, day, protocol, profile_id)
    ) WITHOUT ROWID;

    INSERT INTO log_daily (org_id, day, n)
        SELECT org_id, substr(created_at, 1, 10), count(*) FROM logs WHERE org_id IS NOT NULL GROUP BY 1, 2;
    INSERT INTO transfer_daily (org_id, day, protocol, profile_id, n)
        SELECT org_id, substr(created_at, 1, 10), protocol, ifnull(profile_id, 0), count(*) FROM logs
        WHERE org_id IS NOT NULL AND action IN ('upload', 'download') GROUP BY 1, 2, 3, 4;

    CREATE TRIGGER logs_counted AFTER INSERT ON logs WHEN new.org_id IS NOT NULL BEGIN
        INSERT INTO log_daily (org_id, day, n) VALUES (new.org_id, substr(new.created_at, 1, 10), 1)
            ON CONFLICT (org_id, day) DO UPDATE SET n = n + 1;
        INSERT INTO transfer_daily (org_id, day, protocol, profile_id, n)
            SELECT new.org_id, substr(new.created_at, 1, 10), new.protocol, ifnull(new.profile_id, 0), 1
            WHERE new.action IN ('upload', 'download')
            ON CONFLICT (org_id, day, protocol, profile_id) DO UPDATE SET n = n + 1;
    END;

    CREATE TRIGGER logs_uncounted AFTER DELETE ON logs WHEN old.org_id IS NOT NULL BEGIN
        UPDATE log_daily SET n = n - 1 WHERE org_id = old.org_id AND day = substr(old.created_at, 1, 10);
        DELETE FROM log_daily WHERE org_id = old.org_id AND day = substr(old.created_at, 1, 10) AND n <= 0;
        UPDATE transfer_daily SET n = n - 1
            WHERE old.action IN ('upload', 'download') AND org_id = old.org_id
            AND day = substr(old.created_at, 1, 10) AND protocol = old.protocol
            AND profile_id = ifnull(old.profile_id, 0);
        DELETE FROM transfer_daily
            WHERE old.action IN ('upload', 'download') AND org_id = old.org_id
            AND day = substr(old.created_at, 1, 10) AND protocol = old.protocol
            AND profile_id = ifnull(old.profile_id, 0) AND n <= 0;
    END;

    -- a deleted profile (ON DELETE SET NULL) or any other change: uncount the old row, count the new
    CREATE TRIGGER logs_recounted AFTER UPDATE OF org_id, profile_id, protocol, action, created_at ON logs BEGIN
        UPDATE log_daily SET n = n - 1 WHERE old.org_id IS NOT NULL
            AND org_id = old.org_id AND day = substr(old.created_at, 1, 10);
        DELETE FROM log_daily WHERE old.org_id IS NOT NULL
            AND org_id = old.org_id AND day = substr(old.created_at, 1, 10) AND n <= 0;
        UPDATE transfer_daily SET n = n - 1
            WHERE old.org_id IS NOT NULL AND old.action IN ('upload', 'download') AND org_id = old.org_id
            AND day = substr(old.created_at, 1, 10) AND protocol = old.protocol
            AND profile_id = ifnull(old.profile_id, 0);
        DELETE FROM transfer_daily
            WHERE old.org_id IS NOT NULL AND old.action IN ('upload', 'download') AND org_id = old.org_id
            AND day = substr(old.created_at, 1, 10) AND protocol = old.protocol
            AND profile_id = ifnull(old.profile_id, 0) AND n <= 0;
        INSERT INTO log_daily (org_id, day, n)
            SELECT new.org_id, substr(new.created_at, 1, 10), 1 WHERE new.org_id IS NOT NULL
            ON CONFLICT (org_id, day) DO UPDATE SET n = n + 1;
        INSERT INTO transfer_daily (org_id, day, protocol, profile_id, n)
            SELECT new.org_id, substr(new.created_at, 1, 10), new.protocol, ifnull(new.profile_id, 0), 1
            WHERE new.org_id IS NOT NULL AND new.action IN ('upload', 'download')
            ON CONFLICT (org_id, day, protocol, profile_id) DO UPDATE SET n = n + 1;
    END;
    """,
    # 6: sign-ins with an OAuth2 provider in progress for sources (authorization code
    # with PKCE): one row per `state` handed to an admin's browser, used once, for 10 minutes
    """
    CREATE TABLE source_sign_ins (
        state_hash TEXT PRIMARY KEY,
        org_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
        profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
        code_verifier TEXT NOT NULL,
        redirect_uri TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX source_sign_ins_expires ON source_sign_ins(expires_at);
    """,
    # 7: web sessions: every token of one sign-in carries its session id, so a sign-out
    # ends the session's access tokens at once, not when they expire
    """
    ALTER TABLE refresh_tokens ADD COLUMN session_id TEXT;
    CREATE INDEX refresh_tokens_session ON refresh_tokens(session_id);
    CREATE TABLE ended_sessions (
        session_id TEXT PRIMARY KEY,
        until TEXT NOT NULL
    );
    CREATE INDEX ended_sessions_until ON ended_sessions(until);
    """,
    # 8: local folders kept for their organisation after its source was deleted with its
    # files left in place: nobody else may claim them until the operator releases them
    """
    CREATE TABLE reserved_folders (
        id INTEGER PRIMARY KEY,
        org_id INTEGER NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        source_name TEXT NOT NULL,
        reserved_at TEXT NOT NULL
    );
    CREATE INDEX reserved_folders_org ON reserved_folders(org_id);
    """,
    # 9: appliance-wide settings the operator keeps in the console (the public host name,
    # outbound mail), one row a key, its value as JSON (a password sealed with secrets.key);
    # a key the config file sets is never read from here
    """
    CREATE TABLE appliance_settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        changed_at TEXT NOT NULL
    ) WITHOUT ROWID;
    """,
]
