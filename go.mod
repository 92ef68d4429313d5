module github.com/hilodb/hilodb

go 1.26

require (
	github.com/coder/websocket v1.8.15
	github.com/tidwall/buntdb v1.3.2
	github.com/tidwall/gjson v1.20.0
)

require (
	github.com/tidwall/btree v1.4.2 // indirect
	github.com/tidwall/grect v0.1.4 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	github.com/tidwall/rtred v0.1.2 // indirect
	github.com/tidwall/tinyqueue v0.1.1 // indirect
)
