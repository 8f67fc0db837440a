package acp

import (
	"context"

	acpsdk "github.com/coder/acp-go-sdk"
)

// ListSessions lists the stored and live sessions, newest first, filtered
// by cwd, in pages of 50 with an opaque cursor.
func (a *Agent) ListSessions(_ context.Context, p acpsdk.ListSessionsRequest) (resp acpsdk.ListSessionsResponse, err error) {
	defer a.recoverTo("session/list", &err)
	var cwd, cursor string
	if p.Cwd != nil {
		cwd = *p.Cwd
	}
	if p.Cursor != nil {
		cursor = *p.Cursor
	}
	page, err := a.opts.Sessions.List(cwd, cursor)
	if err != nil {
		return acpsdk.ListSessionsResponse{}, toRequestError(err)
	}
	resp.Sessions = make([]acpsdk.SessionInfo, 0, len(page.Sessions))
	for _, s := range page.Sessions {
		info := acpsdk.SessionInfo{SessionId: acpsdk.SessionId(s.ID), Cwd: s.Cwd, AdditionalDirectories: s.Roots}
		if s.Title != "" {
			info.Title = acpsdk.Ptr(s.Title)
		}
		if !s.Updated.IsZero() {
			info.UpdatedAt = acpsdk.Ptr(timestamp(s.Updated))
		}
		resp.Sessions = append(resp.Sessions, info)
	}
	if page.NextCursor != "" {
		resp.NextCursor = acpsdk.Ptr(page.NextCursor)
	}
	return resp, nil
}
