package fence_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/zkraft/zkraft/fence"
)

// A key-value resource kept in a JSON file, written only under the guard.
// A program run under `zkraft lock` reads its token with fence.TokenFromEnv;
// here the tokens are written out.
func Example() {
	dir, err := os.MkdirTemp("", "fence-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	guard, err := fence.OpenFileGuard(filepath.Join(dir, "tokens"))
	if err != nil {
		log.Fatal(err)
	}
	store := filepath.Join(dir, "config.json")
	put := func(token int64, key, value string) error {
		return guard.Do("config.json", token, func() error {
			kv := map[string]string{}
			if b, err := os.ReadFile(store); err == nil {
				if err := json.Unmarshal(b, &kv); err != nil {
					return err
				}
			}
			kv[key] = value
			b, err := json.Marshal(kv)
			if err != nil {
				return err
			}
			return os.WriteFile(store, b, 0o644)
		})
	}

	fmt.Println(put(4294967300, "owner", "A")) // A holds the lock (token = its lock node's czxid)
	// A stalls; its session expires; B acquires the lock with a later czxid.
	fmt.Println(put(4294967310, "owner", "B"))
	err = put(4294967300, "owner", "A again") // A resumes and writes late
	fmt.Println(errors.Is(err, fence.ErrStaleToken), err)
	b, _ := os.ReadFile(store)
	fmt.Println(string(b))
	// Output:
	// <nil>
	// <nil>
	// true fence: stale token 4294967300 for "config.json": 4294967310 already accepted
	// {"owner":"B"}
}
