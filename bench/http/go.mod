module github.com/valkyria/aio/bench/http

go 1.26.0

require github.com/valyala/fasthttp v1.74.0

require (
	github.com/klauspost/compress v1.20.0 // indirect
	github.com/molecule-man/go-brrr v1.0.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
)
