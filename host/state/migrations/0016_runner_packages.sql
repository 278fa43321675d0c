-- paddock state, version 16: installed runner packages (issue 18; docs/runner-packages.md, "Store").
--
-- One row per installed version of a runner package: where it came from, what npm and the tree digest say it is,
-- what the admin accepted, and the listing every run's integrity check compares the folder with. The folder
-- (<data>/runners/<id>@<version>/) is never the source of truth: a folder without a row is not installed.
CREATE TABLE runner_packages (
  runner_id    TEXT NOT NULL,
  version      TEXT NOT NULL,
  -- 'registry' | 'folder' | 'tarball', and what the admin typed.
  source       TEXT NOT NULL CHECK (source IN ('registry', 'folder', 'tarball')),
  spec         TEXT NOT NULL,
  package_name TEXT NOT NULL,
  -- npm's integrity of the tarball (registry installs), NULL otherwise.
  integrity    TEXT,
  -- SHA-256 of the installed tree (host/packages/treeDigest.ts).
  digest       TEXT NOT NULL,
  -- What npm's signature check said: 'verified', 'unsigned', or 'not applicable (<source>)'.
  signatures   TEXT NOT NULL,
  -- JSON: the permissions the admin accepted (host/packages/permissions.ts).
  permissions  TEXT NOT NULL CHECK (json_valid(permissions)),
  -- JSON: packages whose install scripts npm saw and did not run; 1 when the admin allowed a native build.
  skipped_scripts TEXT NOT NULL CHECK (json_valid(skipped_scripts)),
  native_build INTEGER NOT NULL DEFAULT 0,
  -- JSON: the tree listing with each entry's fingerprint; listing_rev moves whenever it is rewritten, so a process
  -- keeps the parsed listing while the revision it parsed is current.
  listing      TEXT NOT NULL CHECK (json_valid(listing)),
  listing_rev  INTEGER NOT NULL DEFAULT 1,
  -- 'ok', or 'tampered' once a check found the tree changed (every run refused until reinstalled or removed).
  status       TEXT NOT NULL CHECK (status IN ('ok', 'tampered')),
  -- The first changed paths a check found (JSON array), NULL while ok.
  tampered     TEXT CHECK (tampered IS NULL OR json_valid(tampered)),
  installed_by TEXT NOT NULL,
  installed_at TEXT NOT NULL,
  -- When the whole tree was last re-hashed (install, `runners verify`, or the scheduled full check).
  verified_at  TEXT NOT NULL,
  PRIMARY KEY (runner_id, version)
) WITHOUT ROWID;
