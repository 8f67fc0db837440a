package asktool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/tools"
)

// fakeAsk answers with answer (or err) and keeps what it was asked.
type fakeAsk struct {
	form, url bool
	answer    tools.Answer
	err       error
	asked     []tools.Elicitation
}

func (f *fakeAsk) Modes() (bool, bool) { return f.form, f.url }

func (f *fakeAsk) Elicit(ctx context.Context, q tools.Elicitation) (tools.Answer, error) {
	f.asked = append(f.asked, q)
	if f.err != nil {
		return tools.Answer{}, f.err
	}
	return f.answer, ctx.Err()
}

func run(t *testing.T, c tools.Caller, args string) tools.Result {
	t.Helper()
	ctx := tools.WithCallID(context.Background(), "call_1")
	return Tool().Prepare(c, json.RawMessage(args)).Run(ctx, nil)
}

func TestAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   string
		answer tools.Answer
		want   string
	}{
		{"choice and words", `{"question":"Which?","options":["A","B"]}`,
			tools.Answer{Action: "accept", Content: map[string]any{"answer": "A", "other": "but fast"}}, "The user answered: A\n(and added: but fast)"},
		{"own words only", `{"question":"Which?","options":["A","B"]}`,
			tools.Answer{Action: "accept", Content: map[string]any{"other": " C "}}, "The user answered: C"},
		{"free answer", `{"question":"Name?"}`,
			tools.Answer{Action: "accept", Content: map[string]any{"answer": "svc"}}, "The user answered: svc"},
		{"a number", `{"question":"How many?"}`,
			tools.Answer{Action: "accept", Content: map[string]any{"answer": 3}}, "The user answered: 3"},
		{"empty form", `{"question":"Name?","options":null}`,
			tools.Answer{Action: "accept"}, textNothing},
		{"declined", `{"question":"Name?"}`, tools.Answer{Action: "decline"}, textDeclined},
		{"cancelled", `{"question":"Name?"}`, tools.Answer{Action: "cancel"}, textCancelled},
		{"unknown action", `{"question":"Name?"}`, tools.Answer{Action: "shrug"}, textCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAsk{form: true, answer: tc.answer}
			r := run(t, tools.Caller{Ask: f}, tc.args)
			if r.Text != tc.want || r.IsError {
				t.Errorf("result = %q (error %v), want %q", r.Text, r.IsError, tc.want)
			}
			if len(f.asked) != 1 || f.asked[0].ToolCallID != "call_1" || f.asked[0].URL != "" {
				t.Fatalf("asked %+v", f.asked)
			}
			var schema struct {
				Properties map[string]map[string]any
				Required   []string
			}
			if err := json.Unmarshal(f.asked[0].Schema, &schema); err != nil {
				t.Fatal(err)
			}
			_, hasEnum := schema.Properties["answer"]["enum"]
			withOptions := strings.Contains(tc.args, `"options":[`)
			if hasEnum != withOptions || (schema.Properties["other"] != nil) != withOptions || (len(schema.Required) == 1) == withOptions {
				t.Errorf("schema %+v for %s", schema, tc.args)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, args, want string
	}{
		{"not an object", `[1]`, "Error: invalid arguments: expected a JSON object"},
		{"no question", `{}`, `Error: "question" must be a non-empty string`},
		{"blank question", `{"question":"  "}`, `Error: "question" must be a non-empty string`},
		{"options not strings", `{"question":"Q?","options":[1]}`, `Error: "options" must be an array of strings`},
		{"empty option", `{"question":"Q?","options":["a",""]}`, `Error: options[1] is empty`},
		{"repeated option", `{"question":"Q?","options":["a","a "]}`, `Error: options[1] repeats "a"`},
		{"too many options", `{"question":"Q?","options":[` + strings.Repeat(`"x",`, 20) + `"y"]}`, `Error: "options" has 21 answers; at most 20`},
		{"long question", `{"question":"` + strings.Repeat("q", maxQuestion+1) + `"}`, `Error: "question" is longer than 2000 characters: ask something shorter`},
		{"a password", `{"question":"Please enter your sudo password"}`, textSecret},
		{"an API key", `{"question":"What's the OpenAI API key?"}`, textSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAsk{form: true}
			r := run(t, tools.Caller{Ask: f}, tc.args)
			if r.Text != tc.want || !r.IsError {
				t.Errorf("result = %q (error %v), want the error %q", r.Text, r.IsError, tc.want)
			}
			if len(f.asked) != 0 {
				t.Errorf("the user was asked: %+v", f.asked)
			}
		})
	}
}

func TestSecretsTold(t *testing.T) {
	for q, want := range map[string]bool{
		"What is your GitHub access token?":                     true,
		"Paste the private key for the deploy user":             true,
		"Give me your credit card number":                       true,
		"Should I keep the API key in .env or in the keychain?": false,
		"Which database should I use?":                          false,
		"Rotate the session tokens now?":                        false,
		"What is the token budget per request?":                 false,
	} {
		if got := asksForSecret(q); got != want {
			t.Errorf("asksForSecret(%q) = %v, want %v", q, got, want)
		}
	}
}

func TestOffered(t *testing.T) {
	tl := Tool()
	for _, tc := range []struct {
		c    tools.Caller
		want bool
	}{
		{tools.Caller{}, false},
		{tools.Caller{Ask: &fakeAsk{url: true}}, false},
		{tools.Caller{Ask: &fakeAsk{form: true}}, true},
	} {
		if got := tools.IsOffered(tl, tc.c); got != tc.want {
			t.Errorf("offered to %+v = %v", tc.c.Ask, got)
		}
	}
	r := run(t, tools.Caller{}, `{"question":"Q?"}`)
	if r.Text != textUnavailable || !r.IsError {
		t.Errorf("called without a form: %q", r.Text)
	}
}

func TestFailures(t *testing.T) {
	f := &fakeAsk{form: true, err: errors.New("the client refused")}
	r := run(t, tools.Caller{Ask: f}, `{"question":"Q?"}`)
	if r.Text != "Error: the question could not be asked: the client refused" || !r.IsError {
		t.Errorf("refused: %q", r.Text)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f = &fakeAsk{form: true, err: context.Canceled}
	r = Tool().Prepare(tools.Caller{Ask: f}, json.RawMessage(`{"question":"Q?"}`)).Run(ctx, nil)
	if r.Text != "Error: the question was withdrawn: the turn ended" || !r.IsError {
		t.Errorf("cancelled: %q", r.Text)
	}
}

func TestTitle(t *testing.T) {
	for q, want := range map[string]string{
		"Which?\nMore detail":    "Ask: Which?…",
		"":                       "Ask the user",
		strings.Repeat("é", 130): "Ask: " + strings.Repeat("é", 119) + "…",
		"esc\x1b[2J":             "Ask: esc␛[2J",
	} {
		if got := title(q); got != want {
			t.Errorf("title(%q) = %q, want %q", q, got, want)
		}
	}
}
