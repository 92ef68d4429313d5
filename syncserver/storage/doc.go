// Package storage owns where the sync server keeps its state and how: a
// small key-value interface (Store and its transactions, Tx) with two
// implementations, the embedded buntdb data file (File, the default) and
// an etcd cluster (Etcd) that several servers with different node tags
// share; the key layout and stored forms of that state (keys.go: HiLo
// counters, identities, node tags, document records); and the operator's
// tools over it with the server stopped: backup, restore, repair and
// setting one counter, for either store. It knows nothing of the
// websocket protocol or the HTTP doors: syncserver decides what to write,
// storage makes it durable.
//
// # Durability
//
// Update returns only once its writes are durable. On the data file,
// transactions that arrive together share one buntdb transaction and one
// fsync (group commit), so many clients do not wait for as many fsyncs in
// a row; a failed fsync stops all further changes until a restart
// (ErrFailed). At open the data file is read in full: an unfinished last
// write is cut off, damage elsewhere is a *CorruptError, and Repair
// rebuilds the file, raising every counter past anything that may have
// been handed out. Restore does the same for a backup.
//
// # etcd
//
// On etcd an update is an optimistic transaction committed with one etcd
// Txn whose compares require every key it read to be unchanged, so no two
// servers hand out the same number; updates that arrive together share one
// Txn, as they share one fsync on the data file. Each server holds its
// node tag under an etcd lease (ClaimTag, ChooseTag, HoldTag). A
// database's change sequence is etcd's revision (etcdchanges.go): a
// document's sequence is its key's mod revision, so a push writes no
// counter (RevTx); each server follows one etcd watch of every document
// write (WatchChanges), whose recent keys (the change log, etcdfeed.go)
// answer pulls from recent checkpoints (Pull) and prove a push's prevSeq
// (OnlyOwn), and each live feed follows an etcd watch of its own (Follow).
// DueTombstones finds the tombstones etcd's compaction made removable.
//
// # Concurrency
//
// A Store is safe for concurrent use. Functions given to Update may run
// more than once (on etcd, when another server changed what they read) and
// must start from scratch each time; they make every check before their
// first write. No goroutine of a store outlives Close.
package storage
