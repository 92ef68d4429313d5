package cluster_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// storeNeutralTests are the syncserver tests about the protocol and the HTTP
// doors rather than the buntdb file (fsync failure, group commit, repair of
// a damaged file, the data-file format): they must pass on either store.
var storeNeutralTests = []string{
	"TestProtocolExample", "TestCapacity", "TestReturnRules", "TestBadInput", "TestTokens",
	"TestNodeTagsUniqueAcrossRestart", "TestStatePersistsAcrossRestart", "TestClientsNoDuplicates",
	"TestClientReconnects", "TestHealthAndMetrics",
	"TestPushPull", "TestSubscribe", "TestTombstoneCompaction", "TestGet", "TestDeleteOfUnknownDocument",
	"TestIdentityNextBatchProtocol", "TestIdentitiesConcurrent", "TestClientNextIdentitiesErrors",
	"TestCollectionDefinitions", "TestHTTPDoorsAreGuarded", "TestDashboard",
	"TestReturnOnlyFromTheLessee", "TestLastMaxCannotExhaustATag", "TestGetRepliesAreBounded",
	"TestPushConflictRepliesAreBounded", "TestSameRevDifferentContentConflicts", "TestRepeatedMembersRefused",
	"TestUnpairedSurrogatesRefused", "TestSinceAboveSequenceRefused", "TestPipelinedPushes", "TestPushNamesAnIDAgain",
	"TestRevisionsOnlyGrow", "TestHTTPWritesPassThePushedRev", "TestSameRevOtherLoneSurrogateConflicts", "TestIdentityValuesSkipStoredIDs",
	"TestLostWritesNoted",
}

// TestSyncserverSuiteOnEtcd runs the sync server's own tests of the
// protocol and the HTTP doors again with every test server on a real etcd
// cluster instead of a buntdb file: both stores answer alike.
func TestSyncserverSuiteOnEtcd(t *testing.T) {
	ec := startEtcd(t)
	cmd := exec.Command("go", "test", "-race", "-count=1", "-run", "^("+strings.Join(storeNeutralTests, "|")+")$", "-v", "../syncserver/")
	cmd.Env = append(os.Environ(), "HILODB_TEST_ETCD="+strings.Join(ec.Endpoints(), ","))
	out, err := cmd.CombinedOutput()
	passed := strings.Count(string(out), "--- PASS: Test")
	if err != nil {
		t.Fatalf("syncserver tests on etcd: %v\n%s", err, out)
	}
	for _, name := range storeNeutralTests {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass on etcd", name)
		}
	}
	// The tests' state is in etcd, one prefix per test server.
	cli := etcdClient(t, ec.Endpoints())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, key := range []string{"test/TestPushPull/", "test/TestIdentitiesConcurrent/", "test/TestCollectionDefinitions/"} {
		resp, err := cli.Get(ctx, key, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count == 0 {
			t.Errorf("no keys under %s in etcd: the tests did not run on it", key)
		}
	}
	t.Logf("%d syncserver tests passed on etcd", passed)
}
