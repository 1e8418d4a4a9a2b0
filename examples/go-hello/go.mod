module example.com/go-hello

go 1.21
