module github.com/openhcp/openhcp/test

go 1.26
