-- paddock state, version 20: where a host start's pids mean something (docs/scale-out.md §4, "Judged by the lease").
-- pid_scope is the machine's boot id and the host process's pid namespace, `<boot id>/<pid:[inode]>`: a host judges
-- a run of its own host id by pid only when the start that owns it ran in its own pid scope. A data folder copied to
-- another machine (or into another container) keeps its host id, and its pids there say nothing about the original's
-- processes: those runs are judged by their lease, as another host's are. NULL: a start before version 20.
ALTER TABLE hosts ADD COLUMN pid_scope TEXT;
