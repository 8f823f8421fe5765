package ledger_test

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// SetConsumerLimit's answer and log line, per case: a bad limit is refused
// naming the budget, the consumer and the resource; a good one is kept even
// for a consumer the ledger knows no slice of, and the log line says so,
// so that a mistyped consumer ID can be found.
func TestSetConsumerLimitSays(t *testing.T) {
	cases := map[string]struct {
		reason   string
		consumer string
		// before is a limit the consumer had before, if any.
		before  corev1.ResourceList
		limit   corev1.ResourceList
		wantErr string
		wantLog []string
		kept    bool
	}{
		"Negative": {
			reason:   "A negative quantity is refused as a consumer limit, not as a total, naming the consumer and each resource.",
			consumer: "globex", limit: res("-1", "-2Gi"),
			wantErr: `budget "pool": negative quantity in consumer limit of "globex": cpu=-1, memory=-2Gi`,
		},
		"EmptyConsumer": {
			reason:   "No consumer is called \"\": refused, not kept for a consumer that cannot appear.",
			consumer: "", limit: cpu("1"),
			wantErr: `budget "pool": consumer limit for an empty consumer: name the consumer's cluster ID`,
		},
		"Known": {
			reason:   "A consumer with a slice in the books: the line says what was set and how many slices it shrank.",
			consumer: "globex", limit: cpu("1"),
			wantLog: []string{`"msg"="consumer limit set"`, `"consumer"="globex"`, `"limit"="cpu 1"`, `"shrunk"=1`},
			kept:    true,
		},
		"Raised": {
			reason:   "A limit raised above what the consumer holds lifts the earlier cap and shrinks nothing.",
			consumer: "globex", before: cpu("1"), limit: cpu("4"),
			wantLog: []string{`"msg"="consumer limit set"`, `"consumer"="globex"`, `"limit"="cpu 4"`, `"shrunk"=0`},
			kept:    true,
		},
		"KnownByAWaiter": {
			reason:   "A consumer whose only slice waits is known too.",
			consumer: "waiting", limit: cpu("1"),
			wantLog: []string{`"msg"="consumer limit set"`, `"consumer"="waiting"`, `"shrunk"=0`},
			kept:    true,
		},
		"Unknown": {
			reason:   "A consumer the books know no slice of: kept for when it appears, and the line says so.",
			consumer: "globx", limit: cpu("1"),
			wantLog: []string{"knows no slice of", "check the consumer ID", `"consumer"="globx"`, `"limit"="cpu 1"`},
			kept:    true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, _ := newLedger(t, cpu("8"))
			var lines []string
			l.SetLogger(funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{}))
			holdAs(l, "g", "globex", cpu("2"))
			refused(t, []*ledger.Ledger{l}, request("w", "waiting", at(1), cpu("9")))
			if tc.before != nil {
				require.NoError(t, l.SetConsumerLimit(tc.consumer, tc.before))
				lines = nil
			}
			err := l.SetConsumerLimit(tc.consumer, tc.limit)
			if tc.wantErr != "" {
				require.Error(t, err, tc.reason)
				assert.Equal(t, tc.wantErr, err.Error(), tc.reason)
				assert.Empty(t, l.ConsumerLimits(), "a refused limit changes nothing")
				assert.Empty(t, lines, "a refused limit is the caller's error, not a log line")
				return
			}
			require.NoError(t, err, tc.reason)
			_, kept := l.ConsumerLimits()[tc.consumer]
			assert.Equal(t, tc.kept, kept, tc.reason)
			require.Len(t, lines, 1, "one line a call")
			for _, want := range tc.wantLog {
				assert.Contains(t, lines[0], want, tc.reason)
			}
		})
	}
}

// The ledger logs nowhere until a manager feeds it; the overrides set
// before are logged then, once, and a second manager's logger does not
// replace the first.
func TestSetLoggerLogsEarlierLimits(t *testing.T) {
	l, _ := newLedger(t, cpu("8"))
	require.NoError(t, l.SetConsumerLimit("b", cpu("2")))
	require.NoError(t, l.SetConsumerLimit("a", cpu("1")))
	var first, second []string
	l.SetLogger(funcr.New(func(_, args string) { first = append(first, args) }, funcr.Options{}))
	l.SetLogger(funcr.New(func(_, args string) { second = append(second, args) }, funcr.Options{}))
	require.Len(t, first, 2, "each earlier override, once")
	assert.True(t, strings.Contains(first[0], `"consumer"="a"`) && strings.Contains(first[1], `"consumer"="b"`),
		"by consumer: %q", first)
	assert.Contains(t, first[0], "before the budget was fed")
	require.NoError(t, l.SetConsumerLimit("a", nil))
	assert.Len(t, first, 3, "the first logger stays")
	assert.Empty(t, second)
}
