module github.com/openhcp/openhcp/frontend

go 1.26
