module github.com/openhcp/openhcp/internal

go 1.26
