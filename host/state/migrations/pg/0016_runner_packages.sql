-- paddock state, version 16, PostgreSQL: installed runner packages (docs/runner-packages.md, "Store").
CREATE TABLE runner_packages (
  runner_id    text NOT NULL,
  version      text NOT NULL,
  source       text NOT NULL CHECK (source IN ('registry', 'folder', 'tarball')),
  spec         text NOT NULL,
  package_name text NOT NULL,
  integrity    text,
  digest       text NOT NULL,
  signatures   text NOT NULL,
  permissions  text NOT NULL CHECK (permissions::json IS NOT NULL),
  skipped_scripts text NOT NULL CHECK (skipped_scripts::json IS NOT NULL),
  native_build bigint NOT NULL DEFAULT 0,
  listing      text NOT NULL CHECK (listing::json IS NOT NULL),
  listing_rev  bigint NOT NULL DEFAULT 1,
  status       text NOT NULL CHECK (status IN ('ok', 'tampered')),
  tampered     text CHECK (tampered IS NULL OR tampered::json IS NOT NULL),
  installed_by text NOT NULL,
  installed_at text NOT NULL,
  verified_at  text NOT NULL,
  PRIMARY KEY (runner_id, version)
);
