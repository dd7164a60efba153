module github.com/openhcp/openhcp/backend

go 1.26
