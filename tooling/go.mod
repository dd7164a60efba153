module github.com/openhcp/openhcp/tooling

go 1.26
