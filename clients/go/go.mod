module github.com/nomos/nomos-continue/clients/go

go 1.19
