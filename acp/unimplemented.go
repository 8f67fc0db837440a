package acp

import (
	"context"

	acpsdk "github.com/coder/acp-go-sdk"
)

// Methods of the SDK's Agent interface whose capabilities we do not
// advertise. Each answers "method not found", as for any unknown method.

func (a *Agent) Logout(context.Context, acpsdk.LogoutRequest) (acpsdk.LogoutResponse, error) {
	return acpsdk.LogoutResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodLogout)
}
