/* test_torch_model: torch operators by name, the program's own Python files,
 * and the source scans behind the PyTorch findings. */
#include "check.h"
#include "analysis/torch_model.h"
#include "util/strbuf.h"

#include <string.h>

static void op_is(const char *function, const char *want)
{
	struct strbuf sb = STRBUF_INIT;
	int is = torch_op_name(function, &sb);
	if (want) {
		CHECK(is);
		CHECK_STR_EQ(strbuf_str(&sb), want);
	} else {
		CHECK(!is && sb.len == 0);
	}
	strbuf_release(&sb);
}

TEST(
    op_names,
    "a dispatcher entry names its aten operator and an autograd node its backward, other frames name none")
{
	op_is("at::_ops::addmm::call(at::Tensor const&, at::Tensor const&, at::Tensor const&)",
	      "aten::addmm");
	op_is("at::_ops::mm::redispatch(c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)",
	      "aten::mm");
	op_is("at::_ops::fill__Scalar::call(at::Tensor&, c10::Scalar const&)",
	      "aten::fill__Scalar");
	op_is("torch::autograd::generated::AddmmBackward0::apply(std::vector<at::Tensor>&&)",
	      "AddmmBackward0");
	op_is("at::native::structured_mm_out_cpu::impl(at::Tensor const&)", NULL);
	op_is("at::_ops::mm::schema()", NULL);
	op_is("at::_ops::::call()", NULL);
	op_is("torch::autograd::generated::details::foo::apply(int)", NULL);
	op_is("libtorch_cpu.so.1.13.0+0x3b3e200", NULL);
	op_is(NULL, NULL);
}

TEST(modules, "OpenMP runtimes and torch's native libraries are told by their file names")
{
	CHECK(torch_module_is_openmp("/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0"));
	CHECK(torch_module_is_openmp("/opt/conda/lib/libiomp5.so"));
	CHECK(torch_module_is_openmp("/usr/lib/llvm-14/lib/libomp.so.5"));
	CHECK(!torch_module_is_openmp("/usr/lib/libompl.so") && !torch_module_is_openmp(NULL));
	CHECK(torch_module_is_torch("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0"));
	CHECK(torch_module_is_torch("/site-packages/torch/lib/libc10.so"));
	CHECK(!torch_module_is_torch("/usr/bin/python3.11") && !torch_module_is_torch(NULL));
}

TEST(own_files,
     "the program's own Python files are neither the standard library nor installed packages")
{
	CHECK(torch_file_is_own("/home/me/train.py"));
	CHECK(torch_file_is_own("train.py"));
	CHECK(!torch_file_is_own("/usr/lib/python3/dist-packages/torch/nn/modules/linear.py"));
	CHECK(!torch_file_is_own(
	    "/venv/lib/python3.12/site-packages/torch/utils/data/dataloader.py"));
	CHECK(!torch_file_is_own("/usr/lib/python3.11/multiprocessing/queues.py"));
	CHECK(!torch_file_is_own("<frozen importlib._bootstrap>"));
	CHECK(!torch_file_is_own(NULL) && !torch_file_is_own(""));
	/* a project under a lib/python folder of its own is still the program's */
	CHECK(torch_file_is_own("/srv/lib/pythonic/app.py"));
}

static const char train_py[] = "import torch\n"					   /* 1 */
			       "\n"						   /* 2 */
			       "def augment(batch):\n"				   /* 3 */
			       "    out = torch.empty_like(batch)\n"		   /* 4 */
			       "    for i in range(batch.shape[0]):\n"		   /* 5 */
			       "        row = batch[i]\n"			   /* 6 */
			       "        # shift it\n"				   /* 7 */
			       "\n"						   /* 8 */
			       "        out[i] = (row - row.mean()) / row.std()\n" /* 9 */
			       "    return out\n"				   /* 10 */
			       "\n"						   /* 11 */
			       "async def scale(x, w):\n"			   /* 12 */
			       "    for j in range(len(x)):\n"			   /* 13 */
			       "        x[j, :] *= w\n"				   /* 14 */
			       "    for k in range(x.size(0)):\n"		   /* 15 */
			       "        print(k)\n"				   /* 16 */
			       "    for e in range(epochs):\n"			   /* 17 */
			       "        x = x[e]\n"				   /* 18 */
			       "def main():\n"					   /* 19 */
			       "    torch.set_num_threads(8)  # the box has 8\n"   /* 20 */
			       "    for x, y in loader:\n"			   /* 21 */
			       "        step(x)\n";				   /* 22 */

TEST(row_loops,
     "a line in a loop over a batch's rows that indexes them names the loop; other loops do not")
{
	size_t len = strlen(train_py);
	struct torch_row_loop loop;
	CHECK(torch_row_loop_at(train_py, len, 9, &loop));
	CHECK_INT_EQ(loop.line, 5);
	CHECK_STR_EQ(loop.var, "i");
	CHECK_STR_EQ(loop.tensor, "batch");
	CHECK(torch_row_loop_at(train_py, len, 6, &loop) && loop.line == 5);
	CHECK(torch_row_loop_at(train_py, len, 14, &loop) && loop.line == 13);
	CHECK_STR_EQ(loop.tensor, "x");
	/* range(x.size(0)) whose body never indexes x is not a row loop */
	CHECK(!torch_row_loop_at(train_py, len, 16, &loop));
	/* range(epochs) is not over a tensor's rows */
	CHECK(!torch_row_loop_at(train_py, len, 18, &loop));
	CHECK(!torch_row_loop_at(train_py, len, 22, &loop));
	/* the loop's own line, a line outside any loop, past the end, no text */
	CHECK(!torch_row_loop_at(train_py, len, 5, &loop));
	CHECK(!torch_row_loop_at(train_py, len, 4, &loop));
	CHECK(!torch_row_loop_at(train_py, len, 99, &loop));
	CHECK(!torch_row_loop_at(NULL, 0, 1, &loop));
}

TEST(set_threads, "a set_num_threads call is found with its argument and the function it is in")
{
	size_t len = strlen(train_py);
	int line = 0;
	char arg[64];
	CHECK(torch_set_threads_find(train_py, len, 1, &line, arg));
	CHECK_INT_EQ(line, 20);
	CHECK_STR_EQ(arg, "8");
	const char *nested = "\"\"\"Trains.\n"
			     "- torch.set_num_threads(8) in a docstring\n"
			     "\"\"\"\n"
			     "# torch.set_num_threads(4)\n"
			     "torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))\n";
	CHECK(torch_set_threads_find(nested, strlen(nested), 1, &line, arg));
	CHECK_INT_EQ(line, 5);
	CHECK_STR_EQ(arg, "max(1, (os.cpu_count() or 2) // 2)");
	CHECK(!torch_set_threads_find(nested, strlen(nested), 6, &line, arg));
	CHECK(!torch_set_threads_find("x = 1\nmy_set_num_threads(3)\n", 29, 1, &line, arg));

	struct strbuf fn = STRBUF_INIT;
	CHECK(torch_enclosing_def(train_py, len, 20, &fn));
	CHECK_STR_EQ(strbuf_str(&fn), "main");
	strbuf_reset(&fn);
	CHECK(torch_enclosing_def(train_py, len, 14, &fn));
	CHECK_STR_EQ(strbuf_str(&fn), "scale");
	strbuf_reset(&fn);
	CHECK(torch_enclosing_def(train_py, len, 8, &fn)); /* a blank line in a body */
	CHECK_STR_EQ(strbuf_str(&fn), "augment");
	strbuf_reset(&fn);
	CHECK(!torch_enclosing_def(train_py, len, 1, &fn) && fn.len == 0);
	strbuf_release(&fn);
}

CHECK_MAIN()
