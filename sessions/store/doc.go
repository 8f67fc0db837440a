package store

// How a process uses the store (the wiring lives in cmd/, sessions/ and
// acp/, not here):
//
//   - At start: dir from --state-dir, else DefaultDir(); st, _ := New(Options{Dir: dir,
//     Logger: log}). Nothing is read. --no-persist means no Store at all.
//   - session/new: sess, err := st.Create(id, cwd); keep sess with the live
//     session. Append each event as it happens: Prompt when the prompt
//     arrives; Assistant for each model message (text, reasoning, tool calls
//     with the model's ids and argument text); ToolResult for each result,
//     with what the editor saw; Notice queued/delivered; Config, Mode,
//     AlwaysAllow, Title, Cwd when they change; Usage after each response;
//     Compaction when the history is replaced; TaskStarted/TaskEnded. Call
//     sess.Sync() at every turn boundary (the end of a prompt, however it
//     ends) and after a change made outside a turn (set_config_option,
//     set_mode). Compaction.KeptFromSeq is the Seq Append returned for the
//     first entry kept.
//   - session/load, session/resume: look in the live registry first (a
//     session live here is returned as is: Open would say ErrOpen). Else
//     sess, err := st.OpenState(id): ErrNotFound → -32002; ErrLocked → an
//     error saying the session is open in another dsh-acp process;
//     ErrForeign, ErrNewerVersion → the file is not usable by this version.
//     Take the settings from sess.State(), rebuild the history with
//     sess.Scan (from the last Compaction on, see State.Compaction), and
//     replay for load with another Scan: the log streams by each time and
//     is never held whole beside the history (st.Open, which keeps the
//     entries, is for small readers). If the cwd given differs from State().Cwd, Append
//     Cwd{cwd}. For each of State().RunningTasks, tell the model once and
//     Append TaskEnded{ID, State: "gone"}.
//   - session/close: sess.Close() (syncs, releases the lock; the session
//     stays stored). session/delete: close the live one, then st.Delete(id).
//   - session/list: st.List(ListOptions{Cwd, Cursor}) and merge the live
//     sessions' in-memory title/updatedAt if they are newer than the last
//     Sync; ErrBadCursor → -32602.
//   - Task ids: the executor takes its numbers from st.NextTaskIDs(1)
//     ("bash-" + number) instead of its own counter, so ids are never reused
//     within the state directory.
//
// Never pass the API key, request headers or a spill file's contents in a
// payload: everything given to Append is written to disk as is.
