import app.bad_syntax
import app.bad_encoding
import app.nul_byte
import app.engine  # IPL001: 0 app.gpu
