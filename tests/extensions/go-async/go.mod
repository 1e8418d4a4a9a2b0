module example.com/go-async

go 1.21
