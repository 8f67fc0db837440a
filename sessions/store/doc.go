package store

// How a process uses the store: the API follows a session's life
// (sessions/ is its one user, and the wiring lives there):
//
//   - New(Options) opens the state directory; nothing is read or made
//     until the first write. --no-persist means no Store at all.
//   - Create(id, cwd) stores a new session, open. Append records each event
//     as it happens (see the payload types); Sync makes them durable, at
//     every turn boundary and after a change made outside a turn.
//     Compaction.KeptFromSeq is the Seq Append returned for the first entry
//     kept.
//   - Reopen(id, cwd, roots) makes a stored session go on in this process: State
//     has its settings, Scan streams its log by (to rebuild the history,
//     and again to replay it: a log is never held whole; Open, which keeps
//     the entries, is for small readers), and the move and the tasks its
//     last process left running are recorded. Its errors: ErrNotFound,
//     ErrBadID, ErrLocked (open in another process), ErrOpen (open through
//     this Store), ErrForeign and ErrNewerVersion (not usable by this
//     version).
//   - Session.Close releases a session (it stays stored); Delete removes
//     one that is not open.
//   - List pages through the stored sessions, newest first, from their
//     sidecars; a live session's title and update time may be newer.
//   - NextTaskIDs hands out task numbers never reused within the state
//     directory.
//
// Never pass the API key, request headers or a spill file's contents in a
// payload: everything given to Append is written to disk as is.
